// Reading forge webhook bodies at the edge: GitHub's shapes (which Gitea also sends), GitLab's
// hooks, and a precise refusal of a body that is not what its event sends.
import { describe, expect, it } from "vitest";
import { readForgeHook } from "./forge-hooks.ts";

const sender = { login: "ada", id: 7 };
const issue = {
  number: 12,
  title: "Fix the login",
  body: "It fails on Safari",
  html_url: "https://github.com/acme/app/issues/12",
  labels: [{ name: "bug" }, { name: "gadget" }],
  assignees: [],
};

describe("forge webhook bodies", () => {
  it("reads GitHub's labelled issue and the label just added", () => {
    const reading = readForgeHook("github", "issues", {
      action: "labeled",
      issue,
      label: { name: "gadget" },
      sender,
    });
    expect(reading).toEqual({
      event: {
        type: "issue",
        action: "labeled",
        issue: {
          number: 12,
          title: "Fix the login",
          body: "It fails on Safari",
          url: issue.html_url,
          isPullRequest: false,
        },
        labels: ["bug", "gadget"],
        addedLabel: "gadget",
        assignees: [],
        addedAssignee: null,
        sender: { login: "ada", id: 7 },
      },
    });
  });

  it("reads a comment on a pull request, and a review comment with its path, line and hunk", () => {
    const comment = readForgeHook("gitea", "issue_comment", {
      action: "created",
      issue: { ...issue, body: null, labels: null, pull_request: { merged: false } },
      comment: { id: 3, body: "@gadget rename it", html_url: "https://x/3" },
      sender,
    });
    expect(comment).toMatchObject({
      event: { type: "comment", issue: { isPullRequest: true, body: "" }, review: false },
    });
    const review = readForgeHook("github", "pull_request_review_comment", {
      action: "created",
      pull_request: { number: 4, title: "T", body: null, html_url: "https://x/pull/4" },
      comment: {
        id: 9,
        body: "@gadget use a constant",
        path: "src/app.ts",
        line: null,
        original_line: 41,
        diff_hunk: "@@ -40,2 +40,2 @@\n-a\n+b",
      },
      sender,
    });
    expect(review).toMatchObject({
      event: {
        type: "comment",
        review: true,
        issue: { number: 4, isPullRequest: true },
        comment: { path: "src/app.ts", line: 41, hunk: "@@ -40,2 +40,2 @@\n-a\n+b" },
      },
    });
  });

  it("reads GitLab's issue hook (the label added since) and a note on a merge request's diff", () => {
    const labelled = readForgeHook("gitlab", "Issue Hook", {
      object_kind: "issue",
      user: { username: "ada", id: 5 },
      object_attributes: { iid: 3, title: "T", description: null, url: "u", action: "update" },
      labels: [{ title: "gadget" }],
      changes: { labels: { previous: [] } },
    });
    expect(labelled).toMatchObject({
      event: { type: "issue", addedLabel: "gadget", sender: { login: "ada", id: 5 } },
    });
    const note = readForgeHook("gitlab", "Note Hook", {
      object_kind: "note",
      user: { username: "ada", id: 5 },
      object_attributes: {
        id: 77,
        note: "@gadget again",
        noteable_type: "MergeRequest",
        position: { new_path: "a.ts", new_line: 3 },
      },
      merge_request: { iid: 8, title: "MR", description: "", url: "u" },
    });
    expect(note).toMatchObject({
      event: {
        type: "comment",
        review: true,
        issue: { number: 8, isPullRequest: true },
        comment: { id: 77, path: "a.ts", line: 3 },
      },
    });
  });

  it("reads Gitea's review as its text only, its line comments to be asked for", () => {
    const review = readForgeHook("gitea", "pull_request_comment", {
      action: "reviewed",
      number: 4,
      pull_request: { number: 4, title: "Fix", body: null, html_url: "http://gitea/pulls/4" },
      review: { type: "pull_request_review_comment", content: "" },
      sender,
    });
    expect(review).toMatchObject({
      event: {
        type: "comment",
        action: "created",
        review: true,
        fetchLines: true,
        issue: { number: 4, isPullRequest: true },
        comment: { body: "", path: null, line: null, hunk: null },
      },
    });
  });

  it("reads Gitea's commit status: the commit, its state, context, description and link", () => {
    const sha = "0123456789ABCDEF0123456789abcdef01234567";
    const status = readForgeHook("gitea", "status", {
      sha,
      state: "failure",
      context: "ci/test",
      description: "3 tests failed",
      target_url: "http://ci.example/7",
      sender,
    });
    expect(status).toEqual({
      event: {
        type: "status",
        action: "failure",
        sha: sha.toLowerCase(),
        status: {
          context: "ci/test",
          description: "3 tests failed",
          targetUrl: "http://ci.example/7",
        },
        sender: { login: "ada", id: 7 },
      },
    });
    expect(() =>
      readForgeHook("gitea", "status", { ...{ sha: "not a sha" }, state: "failure", sender }),
    ).toThrow(/^Invalid status event: sha: .*; context: /);
  });

  it("refuses a body that is not its event's with the fields that are wrong, and ignores other events", () => {
    expect(() =>
      readForgeHook("github", "issue_comment", {
        action: "created",
        issue: { ...issue, number: "12" },
        sender,
      }),
    ).toThrow(/^Invalid issue_comment event: issue\.number: .*; comment: /);
    expect(() => readForgeHook("gitea", "issues", "not an object")).toThrow(/Invalid issues event/);
    expect(readForgeHook("github", "push", {})).toEqual({
      ignored: "the event push starts no work",
    });
  });
});

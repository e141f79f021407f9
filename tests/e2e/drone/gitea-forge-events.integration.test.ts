// Work that starts on a real Gitea: Gitea's own webhook, pointed at the server with the project's
// secret, tells it of issues and comments. A collaborator's `@gadget` comment on an issue starts a
// turn on a real drone in the session `issue-<n>`, delivered as a pull request that closes the
// issue, and the bot's comment is edited with the summary; a `@gadget` comment or review on that
// pull request follows up in the same session, a line comment in a review with its file, line and
// diff hunk (asked of Gitea's API: its webhook does not carry them); a failing commit status on
// the pull request's head follows up, twice in a row at most; an issue labelled `gadget` starts
// its own. A user without write access is ignored with the reason, a bad signature is refused
// (401), a repeated delivery is acted on once.

import { createHmac } from "node:crypto";
import type { GiteaRepository, GiteaUser } from "@gadget/services";
import { waitFor } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GiteaStage, startGiteaStage } from "./gitea-stage.ts";
import { waitForTurn } from "./helpers.ts";

interface GiteaComment {
  id: number;
  body: string;
  user: { login: string };
}
interface GiteaPull {
  number: number;
  title: string;
  body: string;
  html_url: string;
  head: { sha: string };
}
interface Delivery {
  event: string;
  action: string | null;
  sender: string | null;
  outcome: string;
  reason: string;
  sessionId: string | null;
  turnId: string | null;
}

let stage: GiteaStage;
let repository: GiteaRepository;
let projectId: string;
let hookUrl: string;
let secret: string;
let alice: GiteaUser;
let mallory: GiteaUser;

/** Polls slower than waitFor's default: each look asks Gitea or the server. */
async function eventually<T>(what: string, check: () => Promise<T | null | undefined | false>) {
  return waitFor(
    async () => {
      const value = await check();
      if (!value) await new Promise((resolve) => setTimeout(resolve, 200));
      return value;
    },
    60_000,
    what,
  ) as Promise<T>;
}

async function deliveries(): Promise<Delivery[]> {
  return (await stage.user.get(`/api/projects/${projectId}/forge-events`)).body.deliveries;
}

async function comments(number: number): Promise<GiteaComment[]> {
  return (
    await stage.gitea.api<GiteaComment[]>(
      "GET",
      `/repos/${repository.fullName}/issues/${number}/comments`,
    )
  ).body;
}

/** The session's open pull request, made by the first tests. */
async function sessionPull(): Promise<GiteaPull> {
  const [pull] = (
    await stage.gitea.api<GiteaPull[]>("GET", `/repos/${repository.fullName}/pulls?state=open`)
  ).body;
  if (!pull) throw new Error("the first tests' pull request is missing");
  return pull;
}

/** The newest delivery once decided (a delivery reads "received" until then) matching `match`. */
async function decided(what: string, match: (delivery: Delivery) => boolean, after = 0) {
  return eventually(what, async () => {
    const found = (await deliveries()).filter(
      (delivery) => delivery.reason !== "received" && match(delivery),
    );
    return found.length > after ? found[0] : null;
  });
}

/** The text of every model request made since `from`, as one string. */
function modelTextSince(from: number): string {
  return JSON.stringify(stage.model.chatRequests.slice(from).map((request) => request.messages));
}

async function openIssue(user: GiteaUser, title: string, body: string): Promise<number> {
  const opened = await stage.gitea.api<{ number: number }>(
    "POST",
    `/repos/${repository.fullName}/issues`,
    { body: { title, body }, token: user.token },
  );
  expect(opened.status).toBe(201);
  return opened.body.number;
}

async function comment(user: GiteaUser, number: number, body: string): Promise<void> {
  const posted = await stage.gitea.api(
    "POST",
    `/repos/${repository.fullName}/issues/${number}/comments`,
    { body: { body }, token: user.token },
  );
  expect(posted.status).toBe(201);
}

beforeAll(async () => {
  stage = await startGiteaStage("gitea_forge_events");
  ({ repository, projectId } = await stage.project("tracker"));
  alice = await stage.gitea.createUser("alice");
  await stage.gitea.addCollaborator(repository, alice, "write");
  mallory = await stage.gitea.createUser("mallory");
  const enabled = await stage.user.patch(`/api/projects/${projectId}`, {
    forge: { kind: "gitea", apiUrl: stage.gitea.apiUrl, events: { enabled: true } },
  });
  expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
  expect(enabled.body.project.forge).toMatchObject({
    hasToken: true,
    hasEventsSecret: false,
    events: { enabled: true, trigger: "@gadget", label: "gadget", reviewFollowUps: true },
  });
  const made = await stage.user.post(`/api/projects/${projectId}/forge-events/secret`);
  expect(made.status).toBe(201);
  ({ url: hookUrl, secret } = made.body);
  expect(hookUrl).toBe(`${stage.server.publicUrl}/api/forge-events/${projectId}`);
  const project = (await stage.user.get("/api/projects")).body.projects.find(
    (entry: { _id: string }) => entry._id === projectId,
  );
  expect(project.forge.hasEventsSecret).toBe(true);
  expect(JSON.stringify(project)).not.toContain(secret);
  // Gitea's own webhook, as a person sets it up from the settings page's URL and secret.
  const hook = await stage.gitea.api("POST", `/repos/${repository.fullName}/hooks`, {
    body: {
      type: "gitea",
      active: true,
      events: ["issues", "pull_request", "status"],
      config: { url: hookUrl, content_type: "json", secret },
    },
  });
  expect(hook.status).toBe(201);
});
afterAll(async () => {
  await stage?.stop();
});

describe("work that starts on a real Gitea", { timeout: 180_000 }, () => {
  it("refuses a bad signature (401), a body that is not the event's (400), and acts on a delivery once", async () => {
    const body = JSON.stringify({ action: "opened" });
    const post = (headers: Record<string, string>, text = body) =>
      fetch(hookUrl, {
        method: "POST",
        headers: { "content-type": "application/json", "x-gitea-event": "issues", ...headers },
        body: text,
      });
    const signed = (text: string) => createHmac("sha256", secret).update(text).digest("hex");
    const bad = await post({ "x-gitea-signature": signed(`${body} `), "x-gitea-delivery": "d-1" });
    expect(bad.status).toBe(401);
    const unsigned = await post({ "x-gitea-delivery": "d-2" });
    expect(unsigned.status).toBe(401);
    // Signed, but not an issues event's body: a precise 400.
    const wrong = await post({ "x-gitea-signature": signed(body), "x-gitea-delivery": "d-3" });
    expect(wrong.status).toBe(400);
    expect((await wrong.json()).error.message).toMatch(/^Invalid issues event: issue: /);
    // An event that starts nothing, sent twice under one delivery id.
    const push = JSON.stringify({ ref: "refs/heads/main" });
    const first = await post(
      { "x-gitea-event": "push", "x-gitea-signature": signed(push), "x-gitea-delivery": "d-4" },
      push,
    );
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ ignored: "the event push starts no work" });
    const again = await post(
      { "x-gitea-event": "push", "x-gitea-signature": signed(push), "x-gitea-delivery": "d-4" },
      push,
    );
    expect(await again.json()).toEqual({ ignored: "delivery d-4 was received before" });
    const listed = await deliveries();
    expect(listed.filter((delivery) => delivery.reason === "bad signature")).toHaveLength(2);
    expect(listed.filter((delivery) => delivery.event === "push")).toHaveLength(1);
  });

  it("a collaborator's @gadget comment on an issue runs a turn whose pull request closes it, and the bot's comment ends with the summary", async () => {
    stage.model.enqueue(
      {
        toolCalls: [
          { name: "write_file", arguments: { path: "CHANGELOG.md", content: "# Changes\n" } },
        ],
      },
      { text: "Added CHANGELOG.md." },
    );
    const number = await openIssue(alice, "Add a changelog", "We need a CHANGELOG.md.");
    await comment(alice, number, "@gadget please take this one");

    const started = await eventually("the delivery that started a turn", async () =>
      (await deliveries()).find((delivery) => delivery.outcome === "started"),
    );
    expect(started).toMatchObject({ event: "issue_comment", action: "created", sender: "alice" });
    const session = (await stage.user.get(`/api/sessions/${started.sessionId}`)).body.session;
    expect(session.name).toBe(`issue-${number}`);
    const turn = await waitForTurn(
      stage.user,
      started.turnId ?? "",
      ["completed", "failed"],
      60_000,
    );
    expect(turn.status).toBe("completed");
    expect(turn.prompt).toContain("We need a CHANGELOG.md.");
    expect(turn.prompt).toContain("Comment by @alice:\n@gadget please take this one");

    const [pull] = (
      await stage.gitea.api<GiteaPull[]>("GET", `/repos/${repository.fullName}/pulls?state=open`)
    ).body;
    expect(pull?.title).toBe(`Add a changelog (#${number})`);
    expect(pull?.body).toContain(`Closes #${number}`);
    expect(turn.delivery).toMatchObject({ pullRequestUrl: pull?.html_url, error: null });

    // One comment of the bot, edited from "working on this" to the summary.
    const summary = await eventually("the bot's comment to be edited", async () => {
      const mine = (await comments(number)).filter((entry) => entry.user.login === stage.bot.name);
      return mine.length === 1 && mine[0]?.body.includes("finished") ? mine[0] : null;
    });
    expect(summary.body).toContain("Gadget Code finished this turn.");
    expect(summary.body).toContain("Added CHANGELOG.md.");
    expect(summary.body).toContain(`Pull request: ${pull?.html_url}`);
    expect(summary.body).toContain(`/sessions/${started.sessionId}`);
  });

  it("a @gadget comment on the session's pull request follows up in that session and updates it", async () => {
    const [pull] = (
      await stage.gitea.api<GiteaPull[]>("GET", `/repos/${repository.fullName}/pulls?state=open`)
    ).body;
    if (!pull) throw new Error("the previous test's pull request is missing");
    stage.model.enqueue(
      {
        toolCalls: [
          {
            name: "write_file",
            arguments: { path: "CHANGELOG.md", content: "# Changes\n\n## 1.0\n" },
          },
        ],
      },
      { text: "Added a version heading." },
    );
    await comment(alice, pull.number, "@gadget add a version heading");
    const followed = await eventually("the follow-up delivery", async () =>
      (await deliveries()).find((delivery) => delivery.outcome === "followed_up"),
    );
    const turn = await waitForTurn(
      stage.user,
      followed.turnId ?? "",
      ["completed", "failed"],
      60_000,
    );
    expect(turn.status).toBe("completed");
    expect(turn.prompt).toContain(`Comment by @alice on pull request #${pull.number}`);
    expect(turn.delivery).toMatchObject({ pullRequestUrl: pull.html_url, error: null });
    const updated = (
      await stage.gitea.api<GiteaPull>("GET", `/repos/${repository.fullName}/pulls/${pull.number}`)
    ).body;
    expect(updated.body).toContain("2. Comment by @alice");
  });

  it("a review with @gadget on the session's pull request follows up in that session", async () => {
    const [pull] = (
      await stage.gitea.api<GiteaPull[]>("GET", `/repos/${repository.fullName}/pulls?state=open`)
    ).body;
    if (!pull) throw new Error("the first test's pull request is missing");
    stage.model.enqueue(
      {
        toolCalls: [
          {
            name: "write_file",
            arguments: { path: "CHANGELOG.md", content: "# Changelog\n\n## 1.0\n" },
          },
        ],
      },
      { text: "Renamed the heading." },
    );
    const before = (await deliveries()).filter((entry) => entry.outcome === "followed_up").length;
    const reviewed = await stage.gitea.api(
      "POST",
      `/repos/${repository.fullName}/pulls/${pull.number}/reviews`,
      {
        body: { event: "COMMENT", body: "@gadget call the heading Changelog" },
        token: alice.token,
      },
    );
    expect(reviewed.status).toBe(200);
    const followed = await eventually("the review's follow-up", async () => {
      const found = (await deliveries()).filter((entry) => entry.outcome === "followed_up");
      return found.length > before ? found[0] : null;
    });
    expect(followed).toMatchObject({ event: "pull_request_comment", sender: "alice" });
    const turn = await waitForTurn(
      stage.user,
      followed.turnId ?? "",
      ["completed", "failed"],
      60_000,
    );
    expect(turn.status).toBe("completed");
    expect(turn.prompt).toContain(`Review comment by @alice on pull request #${pull.number}`);
    expect(turn.prompt).toContain("@gadget call the heading Changelog");
    expect(turn.delivery).toMatchObject({ pullRequestUrl: pull.html_url, error: null });
  });

  it("a line comment with @gadget in a review follows up with its file, line and hunk in the model's request", async () => {
    const pull = await sessionPull();
    stage.model.enqueue(
      {
        toolCalls: [
          {
            name: "write_file",
            arguments: { path: "CHANGELOG.md", content: "# Changelog\n\n## 1.0.0\n" },
          },
        ],
      },
      { text: "Versioned 1.0.0." },
    );
    const before = (await deliveries()).filter((entry) => entry.outcome === "followed_up").length;
    const requestsBefore = stage.model.chatRequests.length;
    // A review with no text of its own: the trigger is in its line comment, on the new file's line 3.
    const reviewed = await stage.gitea.api(
      "POST",
      `/repos/${repository.fullName}/pulls/${pull.number}/reviews`,
      {
        body: {
          event: "COMMENT",
          body: "",
          comments: [{ path: "CHANGELOG.md", body: "@gadget make this 1.0.0", new_position: 3 }],
        },
        token: alice.token,
      },
    );
    expect(reviewed.status).toBe(200);
    const followed = await decided(
      "the line comment's follow-up",
      (entry) => entry.outcome === "followed_up",
      before,
    );
    expect(followed).toMatchObject({ event: "pull_request_comment", sender: "alice" });
    const turn = await waitForTurn(
      stage.user,
      followed.turnId ?? "",
      ["completed", "failed"],
      60_000,
    );
    expect(turn.status).toBe("completed");
    expect(turn.prompt.split("\n")[0]).toBe(
      `Review comment by @alice on pull request #${pull.number} (CHANGELOG.md, line 3)`,
    );
    // What the model was sent: the file and line, Gitea's hunk around it, and the comment.
    const sent = modelTextSince(requestsBefore);
    expect(sent).toContain("File: CHANGELOG.md, line 3");
    expect(sent).toContain(
      JSON.stringify("```diff\n@@ -0,0 +1,3 @@\n+# Changelog\n+\n+## 1.0\n```").slice(1, -1),
    );
    expect(sent).toContain("@gadget make this 1.0.0");
    expect(turn.delivery).toMatchObject({ pullRequestUrl: pull.html_url, error: null });
  });

  it("a line comment with @gadget by a user without write access is ignored, saying why", async () => {
    const pull = await sessionPull();
    const before = (await deliveries()).filter((entry) => entry.sender === "mallory").length;
    const reviewed = await stage.gitea.api(
      "POST",
      `/repos/${repository.fullName}/pulls/${pull.number}/reviews`,
      {
        body: {
          event: "COMMENT",
          body: "",
          comments: [{ path: "CHANGELOG.md", body: "@gadget delete this file", new_position: 1 }],
        },
        token: mallory.token,
      },
    );
    expect(reviewed.status).toBe(200);
    const ignored = await decided(
      "mallory's line comment to be ignored",
      (entry) => entry.sender === "mallory",
      before,
    );
    expect(ignored).toMatchObject({
      event: "pull_request_comment",
      outcome: "ignored",
      reason: `@mallory has no write access to ${repository.fullName}`,
      turnId: null,
    });
  });

  it("a review whose line comments Gitea cannot show still follows up with its text, saying so", async () => {
    const pull = await sessionPull();
    stage.model.enqueue({ text: "Nothing to change." });
    const requestsBefore = stage.model.chatRequests.length;
    // Signed like Gitea's own delivery, for a review Gitea does not have (deleted since, say).
    const body = JSON.stringify({
      action: "reviewed",
      number: pull.number,
      pull_request: { number: pull.number, title: pull.title, body: "", html_url: pull.html_url },
      review: { type: "pull_request_review_comment", content: "@gadget tidy the changelog" },
      sender: { login: alice.name },
    });
    const answer = await fetch(hookUrl, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-gitea-event": "pull_request_comment",
        "x-gitea-delivery": "review-gone-1",
        "x-gitea-signature": createHmac("sha256", secret).update(body).digest("hex"),
      },
      body,
    });
    expect(answer.status).toBe(202);
    const { turnId } = (await answer.json()) as { turnId: string };
    const turn = await waitForTurn(stage.user, turnId, ["completed", "failed"], 60_000);
    expect(turn.status).toBe("completed");
    const sent = modelTextSince(requestsBefore);
    expect(sent).toContain("@gadget tidy the changelog");
    expect(sent).toContain(
      `could not be read from the forge: found no review by @alice on #${pull.number}`,
    );
  });

  it("a failing commit status on the pull request's head follows up, twice in a row at most", async () => {
    const enabled = await stage.user.patch(`/api/projects/${projectId}`, {
      forge: {
        kind: "gitea",
        apiUrl: stage.gitea.apiUrl,
        events: { enabled: true, checkFollowUps: true },
      },
    });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    const pull = await sessionPull();
    /** The pull request's head once Gitea has taken in `commit` (a push is taken in asynchronously). */
    const headAt = (commit: string) =>
      eventually(`the pull request's head at ${commit}`, async () => {
        const now = await stage.gitea.api<GiteaPull>(
          "GET",
          `/repos/${repository.fullName}/pulls/${pull.number}`,
        );
        return now.body.head.sha === commit ? commit : null;
      });
    const setStatus = async (sha: string, state: string, run: number) => {
      const made = await stage.gitea.api("POST", `/repos/${repository.fullName}/statuses/${sha}`, {
        body: {
          state,
          context: "ci/test",
          description: `run ${run}: 3 tests failed`,
          target_url: `http://ci.example/runs/${run}`,
        },
        token: alice.token,
      });
      expect(made.status).toBe(201);
    };
    const statusDeliveries = async () =>
      (await deliveries()).filter((entry) => entry.event === "status");
    const fixing = (run: number) =>
      stage.model.enqueue(
        {
          toolCalls: [
            { name: "write_file", arguments: { path: "fix.txt", content: `fix ${run}\n` } },
          ],
        },
        { text: `Fixed run ${run}.` },
      );

    const first = pull.head.sha;
    await setStatus(first, "success", 0);
    const passed = await decided("the passing status", (entry) => entry.event === "status");
    expect(passed).toMatchObject({
      outcome: "ignored",
      reason: "the status ci/test is success, not failing",
    });

    let head = first;
    for (const run of [1, 2]) {
      fixing(run);
      const requestsBefore = stage.model.chatRequests.length;
      const before = (await statusDeliveries()).length;
      await setStatus(head, run === 1 ? "failure" : "error", run);
      const followed = await decided(
        `status follow-up ${run}`,
        (entry) => entry.event === "status",
        before,
      );
      expect(followed).toMatchObject({ outcome: "followed_up", sender: "alice" });
      const turn = await waitForTurn(
        stage.user,
        followed.turnId ?? "",
        ["completed", "failed"],
        60_000,
      );
      expect(turn.status).toBe("completed");
      expect(turn.prompt.split("\n")[0]).toBe(
        `The status ci/test failed on pull request #${pull.number}`,
      );
      const sent = modelTextSince(requestsBefore);
      expect(sent).toContain(`run ${run}: 3 tests failed`);
      expect(sent).toContain(`Details: http://ci.example/runs/${run}`);
      expect(turn.delivery).toMatchObject({ pullRequestUrl: pull.html_url, error: null });
      if (run === 1) {
        // Another job of the same CI run fails on the same commit: one follow-up per commit.
        const others = (await statusDeliveries()).length;
        const lint = await stage.gitea.api(
          "POST",
          `/repos/${repository.fullName}/statuses/${head}`,
          { body: { state: "failure", context: "ci/lint" }, token: alice.token },
        );
        expect(lint.status).toBe(201);
        const again = await decided(
          "the second failing job",
          (entry) => entry.event === "status",
          others,
        );
        expect(again).toMatchObject({
          outcome: "ignored",
          reason: `a failing status on ${head.slice(0, 12)} was followed up already`,
        });
      }
      head = await headAt(turn.delivery.commit);
    }

    // A third in a row waits for a person; a status on a commit no open pull request heads (main's
    // own CI) starts nothing.
    let before = (await statusDeliveries()).length;
    await setStatus(head, "failure", 3);
    const third = await decided(
      "the third failing status",
      (entry) => entry.event === "status",
      before,
    );
    expect(third).toMatchObject({
      outcome: "ignored",
      reason: "2 check follow-ups in a row already: a person asks for the next",
      turnId: null,
    });
    before = (await statusDeliveries()).length;
    const main = await stage.gitea.api<{ commit: { id: string } }>(
      "GET",
      `/repos/${repository.fullName}/branches/main`,
    );
    await setStatus(main.body.commit.id, "failure", 4);
    const onMain = await decided("the status on main", (entry) => entry.event === "status", before);
    expect(onMain).toMatchObject({
      outcome: "ignored",
      reason: `${main.body.commit.id.slice(0, 12)} is the head of no open pull request`,
    });
  });

  it("an issue labelled gadget by a collaborator starts a turn in its own session", async () => {
    const label = await stage.gitea.api<{ id: number }>(
      "POST",
      `/repos/${repository.fullName}/labels`,
      { body: { name: "gadget", color: "#00aabb" } },
    );
    expect(label.status).toBe(201);
    stage.model.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "LICENSE", content: "MIT\n" } }] },
      { text: "Added the license." },
    );
    const number = await openIssue(alice, "Add a license", "MIT, please.");
    const labelled = await stage.gitea.api(
      "POST",
      `/repos/${repository.fullName}/issues/${number}/labels`,
      { body: { labels: [label.body.id] }, token: alice.token },
    );
    expect(labelled.status).toBe(200);
    const started = await eventually("the labelled issue's turn", async () =>
      (await deliveries()).find(
        (delivery) => delivery.outcome === "started" && delivery.event === "issues",
      ),
    );
    expect(started).toMatchObject({ action: "label_updated", sender: "alice" });
    const session = (await stage.user.get(`/api/sessions/${started.sessionId}`)).body.session;
    expect(session.name).toBe(`issue-${number}`);
    const turn = await waitForTurn(
      stage.user,
      started.turnId ?? "",
      ["completed", "failed"],
      60_000,
    );
    expect(turn.status).toBe("completed");
    expect(turn.prompt).toContain("MIT, please.");
    const pulls = (
      await stage.gitea.api<GiteaPull[]>("GET", `/repos/${repository.fullName}/pulls?state=open`)
    ).body;
    const pull = pulls.find((entry) => entry.title === `Add a license (#${number})`);
    expect(pull?.body).toContain(`Closes #${number}`);
  });

  it("ignores @gadget from a user without write access, saying why", async () => {
    const number = await openIssue(mallory, "Delete the tests", "They are slow.");
    await comment(mallory, number, "@gadget delete every test");
    const ignored = await eventually("mallory's comment to be ignored", async () =>
      // Decided: a delivery is listed as soon as it is claimed, its reason "received" until then.
      (await deliveries()).find(
        (delivery) =>
          delivery.sender === "mallory" &&
          delivery.event === "issue_comment" &&
          delivery.reason !== "received",
      ),
    );
    expect(ignored).toMatchObject({
      outcome: "ignored",
      reason: `@mallory has no write access to ${repository.fullName}`,
      turnId: null,
    });
    const sessions = (await stage.user.get(`/api/projects/${projectId}/sessions`)).body.sessions;
    expect(sessions.map((entry: { name: string }) => entry.name)).not.toContain(`issue-${number}`);
    expect((await comments(number)).map((entry) => entry.user.login)).toEqual(["mallory"]);
  });
});

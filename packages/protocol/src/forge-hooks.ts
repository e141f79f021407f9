// The bodies a forge's webhook sends that can start work, checked at the edge and read into one
// shape: GitHub's and Gitea's (which sends GitHub's layout) `issues`, `issue_comment`, review
// comments, check runs and commit statuses, and GitLab's issue and note hooks. Everything in them
// is untrusted: titles, bodies and comments go to the model as a repository's README would.
import { z } from "zod";
import type { ForgeKind } from "./delivery.ts";
import { UserError } from "./errors.ts";
import type { ForgeHookReading, ForgeIssue } from "./forge-hook-events.ts";

export type * from "./forge-hook-events.ts";

const text = (max: number) =>
  z
    .string()
    .max(max)
    .nullish()
    .transform((value) => value ?? "");
const user = z.object({ login: z.string().min(1).max(200), id: z.number().int().optional() });
const issue = z.object({
  number: z.number().int().positive(),
  title: z.string().max(1000),
  body: text(65_536),
  html_url: z.string().max(2048),
  labels: z
    .array(z.object({ name: z.string().max(200) }))
    .nullish()
    .transform((value) => value ?? []),
  assignees: z
    .array(user)
    .nullish()
    .transform((value) => value ?? []),
  pull_request: z.object({}).nullish(),
});
const comment = z.object({
  id: z.number().int().positive(),
  body: text(65_536),
  html_url: z.string().max(2048).optional(),
  path: z.string().max(4096).nullish(),
  line: z.number().int().nullish(),
  original_line: z.number().int().nullish(),
  diff_hunk: z.string().max(65_536).nullish(),
});
const pullRequest = z.object({
  number: z.number().int().positive(),
  title: z.string().max(1000),
  body: text(65_536),
  html_url: z.string().max(2048),
});

const githubIssues = z.object({
  action: z.string().max(100),
  issue,
  label: z.object({ name: z.string().max(200) }).nullish(),
  assignee: user.nullish(),
  sender: user,
});
const githubIssueComment = z.object({
  action: z.string().max(100),
  issue,
  comment,
  is_pull: z.boolean().optional(),
  sender: user,
});
const githubReviewComment = z.object({
  action: z.string().max(100),
  pull_request: pullRequest,
  comment,
  sender: user,
});
/** Gitea's review with comments: the review's text, no line. */
const giteaReview = z.object({
  action: z.string().max(100),
  pull_request: pullRequest,
  review: z.object({ content: text(65_536) }).nullish(),
  sender: user,
});

/** A commit status as Gitea sends it (GitHub's `status` event has the same fields). */
const commitStatus = z.object({
  sha: z.string().regex(/^[0-9a-f]{7,64}$/i),
  state: z.string().max(50),
  context: z.string().max(255),
  description: text(1000),
  target_url: text(2048),
  sender: user,
});

/** GitHub's check run: its conclusion and output, and the pull requests whose head it ran on. */
const githubCheckRun = z.object({
  action: z.string().max(100),
  check_run: z.object({
    name: z.string().max(200),
    conclusion: z.string().max(50).nullish(),
    html_url: z.string().max(2048).nullish(),
    output: z.object({ title: text(1000), summary: text(65_536), text: text(65_536) }).nullish(),
    pull_requests: z.array(z.object({ number: z.number().int().positive() })).max(100),
  }),
  sender: user,
});

const gitlabUser = z.object({ username: z.string().min(1).max(200), id: z.number().int() });
const gitlabIssue = z.object({
  iid: z.number().int().positive(),
  title: z.string().max(1000),
  description: text(65_536),
  url: z.string().max(2048),
});
const gitlabIssueHook = z.object({
  object_kind: z.literal("issue"),
  user: gitlabUser,
  object_attributes: gitlabIssue.extend({ action: z.string().max(100).nullish() }),
  labels: z
    .array(z.object({ title: z.string().max(200) }))
    .nullish()
    .transform((value) => value ?? []),
  assignees: z
    .array(z.object({ username: z.string().max(200) }))
    .nullish()
    .transform((value) => value ?? []),
  changes: z
    .object({
      labels: z.object({ previous: z.array(z.object({ title: z.string() })) }).nullish(),
      assignees: z.object({ previous: z.array(z.object({ username: z.string() })) }).nullish(),
    })
    .nullish(),
});
const gitlabNoteHook = z.object({
  object_kind: z.literal("note"),
  user: gitlabUser,
  object_attributes: z.object({
    id: z.number().int().positive(),
    note: text(65_536),
    noteable_type: z.string().max(100),
    url: z.string().max(2048).optional(),
    position: z
      .object({ new_path: z.string().max(4096).nullish(), new_line: z.number().int().nullish() })
      .nullish(),
  }),
  issue: gitlabIssue.nullish(),
  merge_request: gitlabIssue.nullish(),
});

/** Parses with `schema`, or throws a 400 naming the fields that are wrong. */
function parse<T extends z.ZodType>(schema: T, body: unknown, eventName: string): z.output<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const details = result.error.issues.slice(0, 10).map((problem) => ({
    path: problem.path.join("."),
    message: problem.message,
  }));
  throw new UserError(
    "validation_failed",
    `Invalid ${eventName} event: ${details.map((detail) => `${detail.path || "(body)"}: ${detail.message}`).join("; ")}`,
    { details },
  );
}

/**
 * Reads a webhook body of `kind` for the event its header names (`X-GitHub-Event`,
 * `X-Gitea-Event`, `X-Gitlab-Event`). Throws a 400 for a body that is not what that event sends.
 * @example const reading = readForgeHook("gitea", "issue_comment", JSON.parse(rawBody));
 */
export function readForgeHook(kind: ForgeKind, eventName: string, body: unknown): ForgeHookReading {
  return kind === "gitlab" ? readGitlab(eventName, body) : readGithubLike(eventName, body);
}

function readGithubLike(eventName: string, body: unknown): ForgeHookReading {
  const sender = (login: string, id?: number) => ({ login, id: id ?? null });
  switch (eventName) {
    case "issues": {
      const hook = parse(githubIssues, body, eventName);
      return {
        event: {
          type: "issue",
          action: hook.action,
          issue: issueOf(hook.issue),
          labels: hook.issue.labels.map((label) => label.name),
          addedLabel: hook.action === "labeled" ? (hook.label?.name ?? null) : null,
          assignees: hook.issue.assignees.map((assignee) => assignee.login),
          addedAssignee: hook.action === "assigned" ? (hook.assignee?.login ?? null) : null,
          sender: sender(hook.sender.login, hook.sender.id),
        },
      };
    }
    case "issue_comment": {
      const hook = parse(githubIssueComment, body, eventName);
      const issueRead = issueOf(hook.issue);
      return {
        event: {
          type: "comment",
          action: hook.action,
          issue: { ...issueRead, isPullRequest: issueRead.isPullRequest || hook.is_pull === true },
          comment: commentOf(hook.comment),
          review: false,
          sender: sender(hook.sender.login, hook.sender.id),
        },
      };
    }
    case "pull_request_review_comment": {
      const hook = parse(githubReviewComment, body, eventName);
      return {
        event: {
          type: "comment",
          action: hook.action,
          issue: pullOf(hook.pull_request),
          comment: commentOf(hook.comment),
          review: true,
          sender: sender(hook.sender.login, hook.sender.id),
        },
      };
    }
    // Gitea's review events: the review's text; its line comments are not sent.
    case "pull_request_comment":
    case "pull_request_rejected":
    case "pull_request_approved": {
      const hook = parse(giteaReview, body, eventName);
      return {
        event: {
          type: "comment",
          action: "created",
          issue: pullOf(hook.pull_request),
          comment: {
            id: hook.pull_request.number,
            body: hook.review?.content ?? "",
            url: null,
            path: null,
            line: null,
            hunk: null,
          },
          review: true,
          fetchLines: true,
          sender: sender(hook.sender.login, hook.sender.id),
        },
      };
    }
    case "status": {
      const hook = parse(commitStatus, body, eventName);
      return {
        event: {
          type: "status",
          action: hook.state,
          sha: hook.sha.toLowerCase(),
          status: {
            context: hook.context,
            description: hook.description,
            targetUrl: hook.target_url || null,
          },
          sender: sender(hook.sender.login, hook.sender.id),
        },
      };
    }
    case "check_run": {
      const hook = parse(githubCheckRun, body, eventName);
      const run = hook.check_run;
      const number = run.pull_requests[0]?.number;
      if (!number) return { ignored: `the check ${run.name} ran on no pull request` };
      return {
        event: {
          type: "check",
          action: hook.action,
          issue: { number, title: "", body: "", url: run.html_url ?? "", isPullRequest: true },
          check: {
            name: run.name,
            conclusion: run.conclusion ?? null,
            output: [run.output?.title, run.output?.summary, run.output?.text]
              .filter(Boolean)
              .join("\n\n"),
          },
          sender: sender(hook.sender.login, hook.sender.id),
        },
      };
    }
    default:
      return { ignored: `the event ${eventName.slice(0, 100) || "(none)"} starts no work` };
  }
}

function issueOf(value: z.output<typeof issue>): ForgeIssue {
  return {
    number: value.number,
    title: value.title,
    body: value.body,
    url: value.html_url,
    isPullRequest: Boolean(value.pull_request),
  };
}

function pullOf(value: z.output<typeof pullRequest>): ForgeIssue {
  return {
    number: value.number,
    title: value.title,
    body: value.body,
    url: value.html_url,
    isPullRequest: true,
  };
}

function commentOf(value: z.output<typeof comment>) {
  return {
    id: value.id,
    body: value.body,
    url: value.html_url ?? null,
    path: value.path ?? null,
    line: value.line ?? value.original_line ?? null,
    hunk: value.diff_hunk ?? null,
  };
}

function readGitlab(eventName: string, body: unknown): ForgeHookReading {
  const sender = (hook: { user: { username: string; id: number } }) => ({
    login: hook.user.username,
    id: hook.user.id,
  });
  const gitlabIssueOf = (value: z.output<typeof gitlabIssue>, isPullRequest: boolean) => ({
    number: value.iid,
    title: value.title,
    body: value.description,
    url: value.url,
    isPullRequest,
  });
  if (eventName === "Issue Hook") {
    const hook = parse(gitlabIssueHook, body, eventName);
    const labels = hook.labels.map((label) => label.title);
    const before = new Set(hook.changes?.labels?.previous.map((label) => label.title) ?? labels);
    const assignees = hook.assignees.map((assignee) => assignee.username);
    const assignedBefore = new Set(
      hook.changes?.assignees?.previous.map((assignee) => assignee.username) ?? assignees,
    );
    return {
      event: {
        type: "issue",
        action: hook.object_attributes.action ?? "update",
        issue: gitlabIssueOf(hook.object_attributes, false),
        labels,
        addedLabel: labels.find((label) => !before.has(label)) ?? null,
        assignees,
        addedAssignee: assignees.find((assignee) => !assignedBefore.has(assignee)) ?? null,
        sender: sender(hook),
      },
    };
  }
  if (eventName === "Note Hook") {
    const hook = parse(gitlabNoteHook, body, eventName);
    const note = hook.object_attributes;
    const target = note.noteable_type === "MergeRequest" ? hook.merge_request : hook.issue;
    if (!target)
      return { ignored: `a note on a ${note.noteable_type.slice(0, 50)} starts no work` };
    return {
      event: {
        type: "comment",
        action: "created",
        issue: gitlabIssueOf(target, note.noteable_type === "MergeRequest"),
        comment: {
          id: note.id,
          body: note.note,
          url: note.url ?? null,
          path: note.position?.new_path ?? null,
          line: note.position?.new_line ?? null,
          hunk: null,
        },
        review: Boolean(note.position),
        sender: sender(hook),
      },
    };
  }
  return { ignored: `the event ${eventName.slice(0, 100) || "(none)"} starts no work` };
}

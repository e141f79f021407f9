// The one shape every forge's webhook event is read into (`readForgeHook`): an issue, a comment or
// review comment, a check run, or a commit status, with who sent it. Everything in them is
// untrusted text from the forge.

/** Who sent an event, as the forge names them (GitLab's numeric id asks for its access). */
export interface ForgeSender {
  login: string;
  id: number | null;
}

/** An issue's fields the prompt and the session need. */
export interface ForgeIssue {
  number: number;
  title: string;
  body: string;
  url: string;
  isPullRequest: boolean;
}

/** An event that may start work, whatever the forge. */
export type ForgeHookEvent =
  | {
      type: "issue";
      action: string;
      issue: ForgeIssue;
      /** The labels now on the issue, and the one just added when the forge says so. */
      labels: string[];
      addedLabel: string | null;
      assignees: string[];
      addedAssignee: string | null;
      sender: ForgeSender;
    }
  | {
      type: "comment";
      action: string;
      issue: ForgeIssue;
      comment: {
        id: number;
        body: string;
        url: string | null;
        path: string | null;
        line: number | null;
        hunk: string | null;
      };
      /** A review comment (on the diff), not a conversation comment. */
      review: boolean;
      /**
       * Gitea's review: the body holds the review's own text only, its line comments (path, line,
       * hunk) are asked of the forge's API. Absent elsewhere.
       */
      fetchLines?: true;
      sender: ForgeSender;
    }
  | {
      type: "check";
      action: string;
      /** The pull request whose head the check ran on. */
      issue: ForgeIssue;
      check: { name: string; conclusion: string | null; output: string };
      sender: ForgeSender;
    }
  | {
      /** A commit status (Gitea's `status` event): on a commit, the pull request not named. */
      type: "status";
      /** The state: `pending`, `success`, `error`, `failure`, `warning`. */
      action: string;
      sha: string;
      status: { context: string; description: string; targetUrl: string | null };
      sender: ForgeSender;
    };

/** The event is read, or not one that starts work (the reason says which). */
export type ForgeHookReading = { event: ForgeHookEvent } | { ignored: string };

// Gitea's reviews, and whom the server obeys. Gitea's review webhook carries the review's text
// only: its line comments (path, line, diff hunk) are asked of Gitea's API, beside the sender's
// permission, and go into the follow-up's prompt as untrusted text.
import type { Models, ProjectDocument } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type { ForgeEventsSettings, ForgeHookEvent } from "@gadget/protocol";
import type { ForgeClient, ReviewLine } from "./forge-client.ts";
import type { Decision } from "./forge-event-turns.ts";
import { followUpPrompt, hasTrigger } from "./forge-prompts.ts";

type CommentEvent = Extract<ForgeHookEvent, { type: "comment" }>;

/** How long a Gitea review's line comments are waited for: its webhook gives up after 5 s. */
const reviewLinesDeadline = 2_500;

/**
 * Gitea's review on a session's pull request: its line comments (path, line, hunk), which the
 * webhook does not carry, are asked of Gitea beside the sender's permission, so the answer
 * waits for one of them only. The trigger may be in the review's text or in a line comment. A
 * fetch that fails or outlasts its deadline starts the turn with the review's text, saying so.
 */
export async function decideReview(
  dependencies: { models: Models; logger: Logger },
  forge: ForgeClient,
  project: ProjectDocument,
  settings: ForgeEventsSettings,
  event: CommentEvent,
): Promise<Decision> {
  const { issue } = event;
  if (!settings.reviewFollowUps) return { ignored: "review follow-ups are off" };
  const session = await dependencies.models.ChatSession.findOne({
    user: project.user,
    project: project._id,
    "pullRequest.number": issue.number,
  })
    .select({ _id: 1 })
    .lean();
  if (!session) return { ignored: `pull request #${issue.number} is not a session's` };
  const deadline = AbortSignal.timeout(reviewLinesDeadline);
  const [lines, refusal] = await Promise.all([
    forge.reviewLines(issue.number, event.sender.login, event.comment.body, deadline).then(
      (found): ReviewLine[] | { unread: string } => found,
      (error: unknown) => ({
        unread: deadline.aborted
          ? `no answer within ${reviewLinesDeadline / 1000} s`
          : (error as Error).message.slice(0, 300),
      }),
    ),
    forge.refusal(event.sender),
  ]);
  const said =
    hasTrigger(event.comment.body, settings.trigger) ||
    (Array.isArray(lines) && lines.some((line) => hasTrigger(line.body, settings.trigger)));
  if (!said) {
    const unread =
      "unread" in lines ? ` (its line comments could not be read: ${lines.unread})` : "";
    return { ignored: `the review does not say ${settings.trigger}${unread}` };
  }
  if (refusal) return { ignored: refusal };
  if ("unread" in lines) {
    dependencies.logger.warn(
      { projectId: String(project._id), pull: issue.number, reason: lines.unread },
      "could not read a Gitea review's line comments",
    );
  }
  return {
    start: {
      issue,
      followUp: true,
      session: session._id,
      prompt: followUpPrompt(event, lines),
    },
  };
}

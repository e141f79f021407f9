// A completed turn's prompt and answer join its session's history: the context of the session's
// next work orders. Once per turn, even when the turn's own write failed after this and the drone
// sends its `done` again. The session also remembers the pull request a turn's delivery opened.
import type { ChatTurnDocument, Models } from "@gadget/db";
import type { AgentEvent, PullRequestRef } from "@gadget/protocol";
import type { Locks } from "../../redis/locks.ts";

/** Appends the turn's exchange to its session's history unless it is there already. */
export async function rememberExchange(
  { models, locks }: { models: Models; locks: Locks },
  turn: Pick<
    ChatTurnDocument,
    "_id" | "session" | "prompt" | "response" | "createdAt" | "finishedAt"
  >,
): Promise<void> {
  const exchange = [
    { role: "user", content: turn.prompt, createdAt: turn.createdAt },
    ...(turn.response
      ? [{ role: "assistant", content: turn.response, createdAt: turn.finishedAt ?? new Date() }]
      : []),
  ];
  await locks.with(`session:${turn.session}`, () =>
    models.ChatSession.updateOne(
      { _id: turn.session, rememberedTurns: { $ne: turn._id } },
      { $push: { history: { $each: exchange }, rememberedTurns: turn._id } },
    ),
  );
}

/** The pull request the last `delivery` event among `events` names, if any. */
export function pullRequestOf(events: readonly AgentEvent[]): PullRequestRef | null {
  for (let index = events.length - 1; index >= 0; index--) {
    const event = events[index];
    if (event?.type !== "delivery") continue;
    const { pullRequestUrl, pullRequestNumber } = event.data;
    if (pullRequestUrl && pullRequestNumber)
      return { url: pullRequestUrl, number: pullRequestNumber };
  }
  return null;
}

/** Records the session's pull request, so the session's next work orders update it. */
export async function rememberPullRequest(
  models: Models,
  sessionId: ChatTurnDocument["session"],
  pullRequest: PullRequestRef,
): Promise<void> {
  await models.ChatSession.updateOne(
    { _id: sessionId },
    { $set: { pullRequest: { url: pullRequest.url, number: pullRequest.number } } },
  );
}

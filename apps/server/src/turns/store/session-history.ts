// A completed turn's prompt, the messages it took while it ran (steering) and its answer join its
// session's history: the context of the session's next work orders. Once per turn, even when the
// turn's own write failed after this and the drone sends its `done` again. The session also remembers the pull request a turn's delivery opened.
import type { ChatTurnDocument, Models } from "@gadget/db";
import type { AgentEvent, IChatMessage, PullRequestRef } from "@gadget/protocol";
import { type SessionWriteDependencies, updateSession } from "./session-writes.ts";

/**
 * What a turn adds to its session's context: prompt (as its `/command` expanded it, which the
 * model worked on, when it called one), steering messages taken, answer.
 */
export async function exchangeOf(
  models: Models,
  turn: Pick<
    ChatTurnDocument,
    "_id" | "prompt" | "images" | "response" | "createdAt" | "finishedAt" | "steering"
  >,
): Promise<IChatMessage[]> {
  const steered = turn.steering?.length
    ? await models.TurnMessage.find({ _id: { $in: turn.steering }, status: "delivered" })
        .sort({ createdAt: 1 })
        .lean()
    : [];
  return [
    {
      role: "user",
      content: withImageNote({ ...turn, prompt: await expandedPrompt(models, turn) }),
      createdAt: turn.createdAt,
    },
    ...steered.map((message) => ({
      role: "user" as const,
      content: message.text,
      createdAt: message.deliveredAt ?? message.createdAt,
    })),
    ...(turn.response
      ? [
          {
            role: "assistant" as const,
            content: turn.response,
            createdAt: turn.finishedAt ?? new Date(),
          },
        ]
      : []),
  ];
}

/** The prompt the drone's `command` event says the model got, else the prompt as typed. */
async function expandedPrompt(
  models: Models,
  turn: Pick<ChatTurnDocument, "_id" | "prompt">,
): Promise<string> {
  // Only a prompt starting with `/` can have called a command: others cost no read.
  if (!turn.prompt.trimStart().startsWith("/")) return turn.prompt;
  const command = await models.TurnEvent.findOne({ turn: turn._id, type: "command" })
    .select({ data: 1 })
    .lean();
  const prompt = (command?.data as { prompt?: unknown } | undefined)?.prompt;
  return typeof prompt === "string" ? prompt : turn.prompt;
}

/**
 * The prompt as later turns read it: its images are not sent again (decision 0051), but the
 * model learns they were there.
 */
function withImageNote(turn: Pick<ChatTurnDocument, "prompt" | "images">): string {
  const images = turn.images ?? [];
  if (images.length === 0) return turn.prompt;
  const names = images.map((image) => image.name ?? image.mediaType).join(", ");
  return `${turn.prompt}\n\n[${images.length === 1 ? "an image was" : `${images.length} images were`} sent with this prompt: ${names}]`;
}

/** Appends the turn's exchange to its session's history unless it is there already. */
export async function rememberExchange(
  dependencies: SessionWriteDependencies,
  turn: Pick<
    ChatTurnDocument,
    "_id" | "session" | "prompt" | "images" | "response" | "createdAt" | "finishedAt" | "steering"
  >,
): Promise<void> {
  const exchange = await exchangeOf(dependencies.models, turn);
  await updateSession(
    dependencies,
    { _id: turn.session, rememberedTurns: { $ne: turn._id } },
    { $push: { history: { $each: exchange }, rememberedTurns: turn._id } },
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
  dependencies: SessionWriteDependencies,
  sessionId: ChatTurnDocument["session"],
  pullRequest: PullRequestRef,
): Promise<void> {
  await updateSession(
    dependencies,
    { _id: sessionId },
    { $set: { pullRequest: { url: pullRequest.url, number: pullRequest.number } } },
  );
}

// Phase 4, response synthesis (docs/architecture.md, "The engine"): when the loop stops for any reason but an answer,
// one last call without tools turns what was gathered into a reply; the user always gets one.
import { type AgentEvent, type ExitReason, splitThinking } from "@gadget/protocol";
import { isAbortError } from "./abort.ts";
import { renderTranscript } from "./compaction.ts";
import { formatDocument } from "./living-document.ts";
import { callModel } from "./model-call.ts";
import { clip } from "./text.ts";
import { accountUsage, modelCallSettings, samplingOf, type TurnContext } from "./turn-context.ts";

/** The answer when nothing at all was gathered. */
export const gracefulMessage =
  "I wasn't able to gather enough data to complete this task. Please try again.";

/**
 * Produces the final answer after an early exit. Streams it as `token` events; returns the text.
 * Abort errors propagate; any other failure yields a mechanical answer.
 */
export async function* synthesize(
  turn: TurnContext,
  reason: ExitReason,
  detail: string,
): AsyncGenerator<AgentEvent, string> {
  const { state } = turn;
  const gathered =
    state.toolCallCount > 0 || Object.keys(state.document.sections).length > 0 || state.summary;
  if (!gathered) return gracefulMessage;

  const window = turn.provider.contextWindow;
  const budget = window ? Math.floor(window * 4 * 0.5) : 400_000;
  const document = formatDocument(state.document.sections);
  const transcript = renderTranscript(state.messages, budget);
  const instruction = [
    `The work stopped before it was finished: ${detail} (${reason}).`,
    document ? `## Living document\n${document}` : "",
    `## What was done in this turn\n${transcript}`,
    "Using only the results above, answer the user's goal now: what you found, what you changed, and what is left to do. Do not call tools.",
  ]
    .filter(Boolean)
    .join("\n\n");
  try {
    const reply = yield* callModel(
      {
        model: state.activeModel,
        messages: [
          {
            role: "system",
            content: `You are Gadget, the programming agent of Gadget Code. Write the final answer of a turn that stopped early, for the user, in markdown.`,
          },
          ...turn.historyParams,
          { role: "user", content: instruction },
        ],
        ...samplingOf(turn),
      },
      modelCallSettings(turn, true, `synthesis-${state.passCount}`),
    );
    yield accountUsage(turn, reply.usage);
    const text = reply.text.trim();
    if (text) return reply.text;
  } catch (error) {
    if (isAbortError(error) || turn.signal.aborted) throw error;
    turn.logger.warn({ err: error }, "synthesis call failed; answering mechanically");
  }
  return mechanicalAnswer(turn, detail);
}

function mechanicalAnswer(turn: TurnContext, detail: string): string {
  const { state } = turn;
  const lastText = [...state.messages]
    .reverse()
    .map((message) =>
      message.role === "assistant" ? splitThinking(message.content).content.trim() : "",
    )
    .find(Boolean);
  const results = state.toolResults
    .slice(-10)
    .map((result) => `- ${result.tool}: ${result.ok ? "" : "failed: "}${result.summary}`)
    .join("\n");
  return [
    `I stopped before finishing (${detail}) and could not write a final summary.`,
    lastText ? `Last note: ${clip(lastText, 1_000)}` : "",
    results ? `Latest tool results:\n${results}` : "",
  ]
    .filter(Boolean)
    .join("\n\n");
}

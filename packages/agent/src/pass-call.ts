// The model call of one pass: the pass's messages built, compacted first when the prompt is near
// the model's window and once more if the provider says it is too long; repeated call ids made distinct.
import type { AgentEvent } from "@gadget/protocol";
import {
  compactContext,
  contextWindowFromError,
  estimateTokens,
  overThreshold,
} from "./compaction.ts";
import { callModel, type ModelReply } from "./model-call.ts";
import { buildPassMessages } from "./prompt.ts";
import { ProviderError } from "./provider-error.ts";
import { modelCallSettings, samplingOf, type TurnContext } from "./turn-context.ts";

/** Gives repeated call ids in one response distinct ids (some local servers reuse `call_0`). */
export function uniqueCallIds(reply: ModelReply): ModelReply["toolCalls"] {
  const seen = new Set<string>();
  return reply.toolCalls.map((call, position) => {
    const id = seen.has(call.id) ? `${call.id}-${position + 1}` : call.id;
    seen.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

/** The pass's model call: compacts first when the prompt is near the window, and once more if the provider says it is too long. */
export async function* callForPass(
  turn: TurnContext,
  pass: number,
): AsyncGenerator<AgentEvent, ModelReply> {
  const { state } = turn;
  const request = () => ({
    model: state.activeModel,
    messages: buildPassMessages(turn, pass),
    tools: turn.toolDefinitions,
    ...samplingOf(turn),
  });
  let next = request();
  if (overThreshold(turn, next.messages)) {
    yield* compactContext(turn, "proactive", pass);
    next = request();
  }
  const settings = modelCallSettings(turn, true, `call-${pass}`);
  try {
    return yield* callModel(next, settings);
  } catch (error) {
    if (!(error instanceof ProviderError) || error.code !== "context_length_exceeded") throw error;
    turn.logger.warn(
      { pass, estimate: estimateTokens(next.messages) },
      "provider reported context overflow",
    );
    const stated = contextWindowFromError(error.message);
    if (stated && !turn.provider.contextWindow) turn.provider.contextWindow = stated;
    yield* compactContext(turn, "reactive", pass);
    return yield* callModel(request(), settings);
  }
}

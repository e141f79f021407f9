// The model call: one streamed Chat Completion turned into events (thinking, token) and a reply
// (text, reasoning, tool calls assembled by index, usage), with retries around it.
import { type AgentEvent, agentEvent, type TokenUsage, type ToolCall } from "@gadget/protocol";
import { abortError, throwIfAborted } from "./abort.ts";
import type { ChatChunk, ChatModel, ChatRequest } from "./chat-model.ts";
import { ProviderError } from "./provider-error.ts";
import { classifyModelError, type RetryPolicy, retryDelay, waitBeforeRetry } from "./retry.ts";
import type { EngineLogger } from "./turn-input.ts";
import { estimateTokensOfText } from "./usage.ts";

export interface ModelReply {
  text: string;
  thinking: string;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  /** True when the provider sent no usage and the numbers are estimates (characters / 4). */
  usageEstimated: boolean;
  finishReason: string | null;
}

export interface ModelCallSettings {
  model: ChatModel;
  signal: AbortSignal;
  retry: RetryPolicy;
  logger: EngineLogger;
  /** Yield `thinking`/`token` events (off for compaction summaries). */
  emitText: boolean;
  /** Prefix for generated call ids when a provider sends none. */
  callIdPrefix: string;
}

/** Deltas as some providers send them: reasoning is not in the SDK's types. */
type Delta = NonNullable<ChatChunk["choices"][number]>["delta"] & {
  reasoning_content?: unknown;
  reasoning?: unknown;
};

/**
 * Calls the model, retrying 408/409/429/5xx and network errors with backoff (honouring
 * `retry-after`). Throws ProviderError for fatal answers and `context_length_exceeded`.
 */
export async function* callModel(
  request: ChatRequest,
  settings: ModelCallSettings,
): AsyncGenerator<AgentEvent, ModelReply> {
  const { signal, retry, logger } = settings;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return yield* streamOnce(request, settings);
    } catch (error) {
      const verdict = classifyModelError(error, signal);
      if (verdict.kind === "abort") throw abortError(signal);
      if (verdict.kind === "context_length")
        throw new ProviderError("context_length_exceeded", verdict.description, {
          httpStatus: 400,
          cause: error,
        });
      if (verdict.kind === "fatal")
        throw new ProviderError(verdict.code, verdict.description, {
          httpStatus: verdict.status,
          cause: error,
        });
      if (attempt >= retry.maxRetries)
        throw new ProviderError(
          "provider_unavailable",
          `The model provider kept failing after ${attempt + 1} attempts: ${verdict.description}`,
          { cause: error },
        );
      const delay = retryDelay(attempt + 1, verdict.retryAfterMs, retry);
      logger.warn(
        {
          attempt: attempt + 1,
          delayMs: Math.round(delay),
          model: request.model,
          reason: verdict.description,
        },
        "model call failed; retrying",
      );
      yield agentEvent("status", {
        message: `Model call failed (${verdict.description}); retrying in ${formatSeconds(delay)} (retry ${attempt + 1} of ${retry.maxRetries})`,
        phase: "retry",
        model: request.model,
      });
      await waitBeforeRetry(delay, signal);
    }
  }
}

function formatSeconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

async function* streamOnce(
  request: ChatRequest,
  settings: ModelCallSettings,
): AsyncGenerator<AgentEvent, ModelReply> {
  const { signal } = settings;
  throwIfAborted(signal);
  let text = "";
  let thinking = "";
  let finishReason: string | null = null;
  let reported: ChatChunk["usage"] | undefined;
  const calls: Array<{ id: string; name: string; arguments: string }> = [];

  for await (const chunk of settings.model.stream(request, { signal })) {
    if (chunk.usage) reported = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    if (choice.finish_reason) finishReason = choice.finish_reason;
    const delta = choice.delta as Delta | undefined;
    if (!delta) continue;
    const reasoning =
      typeof delta.reasoning_content === "string" ? delta.reasoning_content : delta.reasoning;
    if (typeof reasoning === "string" && reasoning.length > 0) {
      thinking += reasoning;
      if (settings.emitText) yield agentEvent("thinking", { text: reasoning });
    }
    if (typeof delta.content === "string" && delta.content.length > 0) {
      text += delta.content;
      if (settings.emitText) yield agentEvent("token", { text: delta.content });
    }
    for (const part of delta.tool_calls ?? []) {
      const index = typeof part.index === "number" ? part.index : calls.length;
      let entry = calls[index];
      if (!entry) {
        entry = { id: "", name: "", arguments: "" };
        calls[index] = entry;
      }
      if (part.id) entry.id = part.id;
      const name = part.function?.name;
      // Most providers send the whole name once; some repeat it in every chunk, a few split it.
      if (name && name !== entry.name) entry.name += name;
      if (part.function?.arguments) entry.arguments += part.function.arguments;
    }
  }
  // The SDK ends an aborted stream quietly instead of throwing.
  throwIfAborted(signal);

  const toolCalls: ToolCall[] = [];
  calls.forEach((call, position) => {
    if (!call?.name) return;
    toolCalls.push({
      id: call.id || `${settings.callIdPrefix}-${position + 1}`,
      name: call.name,
      arguments: call.arguments,
    });
  });

  if (reported) {
    const details = reported as typeof reported & {
      completion_tokens_details?: { reasoning_tokens?: number | null } | null;
      prompt_tokens_details?: { cached_tokens?: number | null } | null;
    };
    return {
      text,
      thinking,
      toolCalls,
      finishReason,
      usageEstimated: false,
      usage: {
        input: reported.prompt_tokens ?? 0,
        output: reported.completion_tokens ?? 0,
        reasoning: details.completion_tokens_details?.reasoning_tokens ?? 0,
        cached: details.prompt_tokens_details?.cached_tokens ?? 0,
      },
    };
  }
  const promptCharacters =
    JSON.stringify(request.messages).length +
    (request.tools ? JSON.stringify(request.tools).length : 0);
  const callCharacters = toolCalls.reduce(
    (sum, call) => sum + call.name.length + call.arguments.length,
    0,
  );
  return {
    text,
    thinking,
    toolCalls,
    finishReason,
    usageEstimated: true,
    usage: {
      input: estimateTokensOfText(promptCharacters),
      output: estimateTokensOfText(text.length + thinking.length + callCharacters),
      reasoning: estimateTokensOfText(thinking.length),
      cached: 0,
    },
  };
}

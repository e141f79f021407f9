// The model call: one streamed Chat Completion turned into events (thinking, token) and a reply
// (text, reasoning, tool calls, usage, read by stream-reader.ts), with retries around it.
import {
  type AgentEvent,
  agentEvent,
  type ProviderQuirkCode,
  type TokenUsage,
  type ToolCall,
} from "@gadget/protocol";
import { abortError, linkedController, throwIfAborted } from "./abort.ts";
import type { ChatModel, ChatRequest } from "./chat-model.ts";
import { adaptMessages } from "./prompt.ts";
import { ProviderError } from "./provider-error.ts";
import { activateQuirk, rejectionOf } from "./rejections.ts";
import { classifyModelError, type RetryPolicy, retryDelay, waitBeforeRetry } from "./retry.ts";
import { type StreamPiece, StreamReader } from "./stream-reader.ts";
import { streamedError } from "./streamed-error.ts";
import { clip } from "./text.ts";
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
  /** Opaque fields to send back on the assistant message (OpenRouter's `reasoning_details`). */
  providerFields?: Record<string, unknown>;
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
  /**
   * The provider's quirks, shared by every call of the turn: each request is adapted to them, and
   * a quirk learned from a rejection is added here so later calls send the adapted request at once.
   */
  quirks: Set<ProviderQuirkCode>;
  /** Who is called, named in errors when the provider cannot be reached. */
  provider?: { name?: string | undefined; baseUrl: string };
  /** A rate-limit wait begun before this call (a resumed turn's): not called before `until`. */
  quotaWait?: { since: number; until: number };
}

/** "provider "OpenRouter" at https://openrouter.ai/api/v1", never with a credential in the URL. */
export function providerLabel(provider: { name?: string | undefined; baseUrl: string }): string {
  let where = provider.baseUrl;
  try {
    const url = new URL(provider.baseUrl);
    url.username = "";
    url.password = "";
    url.search = "";
    where = url.href.replace(/\/$/, "");
  } catch {
    where = provider.baseUrl.replace(/(\w+:\/\/)[^/@\s]+@/g, "$1");
  }
  return `${provider.name ? `provider "${provider.name}"` : "the model provider"} at ${where}`;
}

/**
 * Calls the model, retrying 408/409/429/5xx and network errors with backoff (honouring
 * `retry-after`). A documented rejection (a refused field, a required one, an id format) turns
 * its quirk on, yields `provider_adapted` and sends the adapted call at once, once per quirk.
 * Throws ProviderError for fatal answers and `context_length_exceeded`.
 */
export async function* callModel(
  request: ChatRequest,
  settings: ModelCallSettings,
): AsyncGenerator<AgentEvent, ModelReply> {
  const { signal, retry, logger } = settings;
  // Quirks learned during this call: a provider contradicting itself cannot loop it.
  const learned = new Set<ProviderQuirkCode>();
  let attempt = 0;
  /** When this call began waiting out a rate limit, if it did. */
  let quotaSince: number | null = null;
  const carried = settings.quotaWait;
  if (carried && carried.until > Date.now()) {
    // The turn was waiting when its drone stopped: the wait goes on to the same end.
    quotaSince = carried.since;
    const until = new Date(carried.until);
    yield agentEvent("quota_wait", {
      since: new Date(carried.since).toISOString(),
      until: until.toISOString(),
      message: `Still rate-limited by the provider; calling again at ${until.toISOString()}`,
    });
    await waitBeforeRetry(carried.until - Date.now(), signal);
  }
  for (;;) {
    const sent = adaptRequest(request, settings.quirks);
    try {
      return yield* streamOnce(sent, settings);
    } catch (error) {
      const verdict = classifyModelError(error, signal);
      if (verdict.kind === "abort") throw abortError(signal);
      const rejection = rejectionOf(error, sent);
      if (rejection && !settings.quirks.has(rejection.quirk) && !learned.has(rejection.quirk)) {
        learned.add(rejection.quirk);
        activateQuirk(settings.quirks, rejection.quirk);
        const message = clip(rejection.message, 400);
        logger.warn(
          { quirk: rejection.quirk, model: request.model },
          "provider refused the request; adapting it",
        );
        yield agentEvent("provider_adapted", { quirk: rejection.quirk, message });
        continue;
      }
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
      if (attempt >= retry.maxRetries && verdict.rateLimited && (retry.maxQuotaWaitMs ?? 0) > 0) {
        // A rate limit outlasted the retries: wait for it (the turn says until when), then again.
        const now = Date.now();
        quotaSince ??= now;
        const wait = Math.max(verdict.retryAfterMs ?? retry.maxDelayMs, 1000);
        const limit = retry.maxQuotaWaitMs ?? 0;
        if (now + wait - quotaSince > limit) {
          throw new ProviderError(
            "quota_wait_exceeded",
            `The model provider's rate limit lasted longer than this drone waits (${formatSeconds(limit)}): ${verdict.description}`,
            { cause: error },
          );
        }
        const until = new Date(now + wait);
        logger.warn({ until: until.toISOString(), model: request.model }, "rate-limited; waiting");
        yield agentEvent("quota_wait", {
          since: new Date(quotaSince).toISOString(),
          until: until.toISOString(),
          message: `Rate-limited by the provider (${verdict.description}); calling again at ${until.toISOString()}`,
        });
        await waitBeforeRetry(wait, signal);
        attempt = 0;
        continue;
      }
      if (attempt >= retry.maxRetries) {
        // "Connection error." alone does not say which provider or URL to check.
        const message =
          verdict.network && settings.provider
            ? `Could not reach ${providerLabel(settings.provider)} after ${attempt + 1} attempts (${verdict.description}). Check the provider's base URL and that this drone can reach it.`
            : `The model provider kept failing after ${attempt + 1} attempts: ${verdict.description}`;
        throw new ProviderError("provider_unavailable", message, { cause: error });
      }
      attempt += 1;
      const delay = retryDelay(attempt, verdict.retryAfterMs, retry);
      logger.warn(
        {
          attempt,
          delayMs: Math.round(delay),
          model: request.model,
          reason: verdict.description,
        },
        "model call failed; retrying",
      );
      const failure =
        verdict.network && settings.provider
          ? `${verdict.description} reaching ${providerLabel(settings.provider)}`
          : verdict.description;
      yield agentEvent("status", {
        message: `Model call failed (${failure}); retrying in ${formatSeconds(delay)} (retry ${attempt} of ${retry.maxRetries})`,
        phase: "retry",
        model: request.model,
      });
      await waitBeforeRetry(delay, signal);
    }
  }
}

/** `request` as this provider takes it now: its messages and fields adapted to the quirks. */
function adaptRequest(request: ChatRequest, quirks: ReadonlySet<ProviderQuirkCode>): ChatRequest {
  return { ...request, messages: adaptMessages(request.messages, quirks), quirks: [...quirks] };
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
  const reader = new StreamReader({ callIdPrefix: settings.callIdPrefix });

  // The SDK links the signal it is given to its own and never unlinks it: handed the turn's
  // long-lived signal, every request would leave a listener on it. A child per call is dropped.
  const link = linkedController(signal);
  try {
    for await (const chunk of settings.model.stream(request, { signal: link.controller.signal })) {
      const pieces = reader.read(chunk);
      if (settings.emitText) yield* piecesAsEvents(pieces);
    }
  } catch (error) {
    throw asStreamedError(error);
  } finally {
    link.dispose();
  }
  // The SDK ends an aborted stream quietly instead of throwing.
  throwIfAborted(signal);

  const { pieces, reading } = reader.finish();
  if (settings.emitText) yield* piecesAsEvents(pieces);
  const { text, thinking, toolCalls, finishReason, usage: reported } = reading;
  const providerFields = reading.providerFields ? { providerFields: reading.providerFields } : {};

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
      ...providerFields,
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
    ...providerFields,
    usageEstimated: true,
    usage: {
      input: estimateTokensOfText(promptCharacters),
      output: estimateTokensOfText(text.length + thinking.length + callCharacters),
      reasoning: estimateTokensOfText(thinking.length),
      cached: 0,
    },
  };
}

function* piecesAsEvents(pieces: StreamPiece[]): Generator<AgentEvent> {
  for (const piece of pieces)
    yield agentEvent(piece.kind === "text" ? "token" : "thinking", { text: piece.text });
}

/**
 * The SDK throws a `data: {"error":…}` event of a 200 stream as an APIError without a status,
 * which the retry policy would take for a fatal rejection; it becomes the StreamedError it is.
 */
function asStreamedError(error: unknown): unknown {
  const candidate = error as { status?: unknown; error?: unknown } | null;
  if (!candidate || typeof candidate !== "object" || candidate.status !== undefined) return error;
  if (!candidate.error || typeof candidate.error !== "object") return error;
  return streamedError(candidate.error, error);
}

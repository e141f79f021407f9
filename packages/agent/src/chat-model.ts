// The engine's view of a model: a streaming Chat Completions call. The default goes through the
// `openai` SDK to any OpenAI-compatible base URL; benchmarks plug in an in-process one.
import type { ProviderQuirkCode } from "@gadget/protocol";
import OpenAI from "openai";

export type ChatMessageParam = OpenAI.Chat.ChatCompletionMessageParam;
export type ChatTool = OpenAI.Chat.ChatCompletionFunctionTool;
export type ChatChunk = OpenAI.Chat.ChatCompletionChunk;

/** One model request as the engine builds it. Unset sampling fields are not sent. */
export interface ChatRequest {
  model: string;
  messages: ChatMessageParam[];
  tools?: ChatTool[];
  temperature?: number;
  topP?: number;
  /** Not part of OpenAI's API; sent as the extra body field `top_k` that many servers accept. */
  topK?: number;
  /** The longest answer: `max_tokens`, or `max_completion_tokens` with that quirk. */
  maxTokens?: number;
  /** What the provider refuses or demands; the request builder leaves out or renames fields. */
  quirks?: readonly ProviderQuirkCode[];
}

/** Streams a completion. Errors are thrown as the SDK throws them (status, headers, code). */
export interface ChatModel {
  stream(request: ChatRequest, options: { signal: AbortSignal }): AsyncIterable<ChatChunk>;
}

/**
 * A ChatModel backed by the `openai` SDK. SDK retries are off: the engine retries itself so it
 * can honour `retry-after` and stop at once on abort.
 */
export function openAIChatModel(options: {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  fetch?: typeof fetch;
}): ChatModel {
  const client = new OpenAI({
    baseURL: options.baseUrl,
    // The SDK refuses an empty key; a provider without one (a local server) gets no header.
    apiKey: options.apiKey || "none",
    ...(options.apiKey ? {} : { defaultHeaders: { authorization: null } }),
    maxRetries: 0,
    timeout: options.timeoutMs,
    fetch: withErrorEnvelope(options.fetch ?? fetch),
  });
  return {
    async *stream(request, { signal }) {
      const stream = await client.chat.completions.create(requestBody(request), { signal });
      for await (const chunk of stream) yield chunk;
    },
  };
}

/** The Chat Completions body of `request`, with the provider's quirks applied. */
export function requestBody(
  request: ChatRequest,
): OpenAI.Chat.ChatCompletionCreateParamsStreaming & { top_k?: number } {
  const quirks = new Set(request.quirks ?? []);
  const body: OpenAI.Chat.ChatCompletionCreateParamsStreaming & { top_k?: number } = {
    model: request.model,
    messages: request.messages,
    stream: true,
  };
  // Without it most providers send no usage when streaming; the engine then estimates it.
  if (!quirks.has("no_stream_options")) body.stream_options = { include_usage: true };
  if (request.tools && request.tools.length > 0) body.tools = request.tools;
  if (request.temperature !== undefined && !quirks.has("no_temperature"))
    body.temperature = request.temperature;
  if (request.topP !== undefined && !quirks.has("no_top_p")) body.top_p = request.topP;
  if (request.topK !== undefined) body.top_k = request.topK;
  if (request.maxTokens !== undefined) {
    if (quirks.has("max_completion_tokens")) body.max_completion_tokens = request.maxTokens;
    else body.max_tokens = request.maxTokens;
  }
  return body;
}

/** Error bodies larger than this are passed on as they are (they are not a provider's refusal). */
const maxErrorBodyBytes = 64 * 1024;

/**
 * Wraps an error body without OpenAI's `{"error": …}` envelope in one. Mistral answers
 * `{"object":"error","message":…}`; the SDK reads only `error`, and its message would be
 * "400 status code (no body)", hiding the provider's words from the user and the engine.
 */
export function withErrorEnvelope(inner: typeof fetch): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init);
    if (response.ok || response.status < 400) return response;
    const type = response.headers.get("content-type") ?? "";
    const length = Number(response.headers.get("content-length") ?? "0");
    if (!type.includes("json") || length > maxErrorBodyBytes) return response;
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const enveloped =
      parsed && typeof parsed === "object" && !Array.isArray(parsed) && !("error" in parsed)
        ? JSON.stringify({ error: parsed })
        : text;
    // The body is read (and decoded) already: its old length and encoding no longer apply.
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    headers.delete("content-encoding");
    return new Response(enveloped, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  };
}

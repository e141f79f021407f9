// The engine's view of a model: a streaming Chat Completions call. The default goes through the
// `openai` SDK to any OpenAI-compatible base URL; benchmarks plug in an in-process one.
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
    apiKey: options.apiKey,
    maxRetries: 0,
    timeout: options.timeoutMs,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  return {
    async *stream(request, { signal }) {
      const body: OpenAI.Chat.ChatCompletionCreateParamsStreaming & { top_k?: number } = {
        model: request.model,
        messages: request.messages,
        stream: true,
        stream_options: { include_usage: true },
      };
      if (request.tools && request.tools.length > 0) body.tools = request.tools;
      if (request.temperature !== undefined) body.temperature = request.temperature;
      if (request.topP !== undefined) body.top_p = request.topP;
      if (request.topK !== undefined) body.top_k = request.topK;
      const stream = await client.chat.completions.create(body, { signal });
      for await (const chunk of stream) yield chunk;
    },
  };
}

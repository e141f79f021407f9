// What a test scripts the stand-in model with, and what the model records of each request:
// the vocabulary of `startScriptedModel`, apart from the server that speaks it.
import type { IncomingHttpHeaders } from "node:http";

/** A tool call the scripted model makes. `arguments` objects are sent as JSON text. */
export interface ScriptedToolCall {
  /** Defaults to `call_<request index>_<position>`. */
  id?: string;
  name: string;
  /** A string is sent verbatim (so tests can send malformed JSON); an object is JSON-encoded. */
  arguments: string | Record<string, unknown>;
}

/** Token counts reported in the final usage chunk (or the JSON body's `usage`). */
export interface ScriptedUsage {
  promptTokens: number;
  completionTokens: number;
  /** Sent as `completion_tokens_details.reasoning_tokens`. */
  reasoningTokens?: number;
  /** Sent as `prompt_tokens_details.cached_tokens`. */
  cachedTokens?: number;
}

/** An HTTP error answer, shaped like OpenAI's `{"error":{message,type,code}}`. */
export interface ScriptedError {
  status: number;
  message?: string;
  type?: string;
  code?: string | null;
  /** Extra response headers, e.g. `{"retry-after": "1"}`. */
  headers?: Record<string, string>;
  /** Replaces the whole JSON body when given. */
  body?: unknown;
}

/** One scripted answer to one request. Every field is optional; `{}` answers with an empty message. */
export interface ScriptedReply {
  /** Assistant text, streamed as several `delta.content` chunks. */
  text?: string;
  /** Reasoning text, streamed before the text as `delta.reasoning_content` (or `reasoning`). */
  reasoning?: string;
  /** Which delta field carries reasoning. Default `reasoning_content`. */
  reasoningField?: "reasoning_content" | "reasoning";
  /** Tool calls; each one's id/name come in its first chunk and its arguments in several more. */
  toolCalls?: ScriptedToolCall[];
  /** Alternate argument chunks of several tool calls instead of sending them one after another. */
  interleaveToolCalls?: boolean;
  /** Usage to report. Default: estimated (characters / 4). `null` sends no usage at all. */
  usage?: ScriptedUsage | null;
  /** Default `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string;
  /** Characters per streamed delta. Default 8. */
  chunkSize?: number;
  /** Milliseconds to wait before answering at all (before headers). Default 0. */
  delayMs?: number;
  /** Milliseconds between streamed chunks. Default 0. */
  chunkDelayMs?: number;
  /** Answer with this HTTP error instead. See {@link scriptedErrors}. */
  error?: ScriptedError;
  /** Stop sending after `hangAfterChunks` chunks and keep the connection open until the client aborts. */
  hang?: boolean;
  /** With `hang` or `dropAfterChunks`: chunks sent first. Default 0. */
  hangAfterChunks?: number;
  /** Destroy the socket after this many chunks, like a network failure mid-stream. */
  dropAfterChunks?: number;
  /** The `model` field of the answer. Default: the requested model. */
  model?: string;
  /**
   * A recorded SSE body (e.g. real provider traffic) sent verbatim with status 200, instead of
   * chunks built from the fields above; only `delayMs`, `chunkDelayMs` and `recordedChunkBytes`
   * still apply. Nothing is added: no `[DONE]` unless the recording has it.
   */
  recorded?: string;
  /**
   * With `recorded`: bytes per write, so an event can arrive split across reads.
   * Default: one write per SSE event (the text up to and including each blank line).
   */
  recordedChunkBytes?: number;
}

/** A message as the client sent it (OpenAI wire format). */
export interface RequestMessage {
  role: string;
  content?: string | null | Array<{ type: string; text?: string }>;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  name?: string;
  [field: string]: unknown;
}

/** A Chat Completions request body as received. */
export interface ChatRequestBody {
  model: string;
  messages: RequestMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: Array<{
    type: string;
    function: { name: string; description?: string; parameters?: unknown };
  }>;
  tool_choice?: unknown;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  [field: string]: unknown;
}

/** One request the server received (every path, not only chat completions). */
export interface RecordedRequest {
  /** 0-based position among all requests this server received. */
  index: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body of a chat completion; `undefined` for other requests. */
  body: ChatRequestBody | undefined;
  receivedAt: number;
}

/** What a reply function sees: the parsed request plus conveniences for scripting. */
export interface ScriptedRequest {
  /** 0-based position among chat completion requests. */
  index: number;
  body: ChatRequestBody;
  headers: IncomingHttpHeaders;
  /** The last message of the request, e.g. the tool result the model is being shown. */
  lastMessage: RequestMessage | undefined;
  /** Text of the last message (content parts joined). */
  lastText: string;
  /** Whether the request offers tools (synthesis and summaries send none). */
  hasTools: boolean;
}

/** Computes a reply from the request; `undefined` falls through to the next source. */
export type ReplyFunction = (
  request: ScriptedRequest,
) => ScriptedReply | undefined | Promise<ScriptedReply | undefined>;

export interface ScriptedModelOptions {
  /** Replies used in order, one per chat completion request. More can be added with `enqueue`. */
  replies?: Array<ScriptedReply | ReplyFunction>;
  /** Answers when the queue is empty (e.g. respond based on the last message). */
  handler?: ReplyFunction;
  /** When set, requests without `Authorization: Bearer <apiKey>` get a 401. */
  apiKey?: string;
  /** Ids listed by `GET /v1/models`. Default `["scripted-model"]`. */
  models?: string[];
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
}

export interface ScriptedModel {
  /** Base URL for an OpenAI client, e.g. `http://127.0.0.1:41234/v1`. */
  baseUrl: string;
  /** Every request received, in arrival order. */
  requests: RecordedRequest[];
  /** Bodies of the chat completion requests only, in arrival order. */
  readonly chatRequests: ChatRequestBody[];
  /** Adds replies to the end of the queue. */
  enqueue(...replies: Array<ScriptedReply | ReplyFunction>): void;
  /** Replaces (or with `undefined` removes) the fallback handler. */
  setHandler(handler: ReplyFunction | undefined): void;
  /** Replies still queued. */
  pendingReplies(): number;
  /** Drops the replies still queued (a turn ended before asking for them all). */
  clear(): void;
  /** Resolves once at least `count` chat completion requests arrived; rejects after `timeoutMs` (5000). */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  /** Stops the server, cutting open streams (hung replies end). */
  close(): Promise<void>;
}

/** Ready-made error replies with the bodies and headers OpenAI sends. */
export const scriptedErrors = {
  /** 429 with `retry-after` (seconds) and/or `retry-after-ms`. */
  rateLimited(options: { retryAfterSeconds?: number; retryAfterMs?: number } = {}): ScriptedError {
    const headers: Record<string, string> = {};
    if (options.retryAfterSeconds !== undefined)
      headers["retry-after"] = String(options.retryAfterSeconds);
    if (options.retryAfterMs !== undefined)
      headers["retry-after-ms"] = String(options.retryAfterMs);
    return {
      status: 429,
      message: "Rate limit reached. Please try again later.",
      type: "requests",
      code: "rate_limit_exceeded",
      headers,
    };
  },
  serverError(status = 500): ScriptedError {
    return {
      status,
      message: "The server had an error while processing your request.",
      type: "server_error",
    };
  },
  unauthorized(): ScriptedError {
    return {
      status: 401,
      message: "Incorrect API key provided.",
      type: "invalid_request_error",
      code: "invalid_api_key",
    };
  },
  modelNotFound(model = "unknown-model"): ScriptedError {
    return {
      status: 404,
      message: `The model \`${model}\` does not exist or you do not have access to it.`,
      type: "invalid_request_error",
      code: "model_not_found",
    };
  },
  contextLength(maxTokens = 8192, requested = 9000): ScriptedError {
    return {
      status: 400,
      message: `This model's maximum context length is ${maxTokens} tokens. However, your messages resulted in ${requested} tokens. Please reduce the length of the messages.`,
      type: "invalid_request_error",
      code: "context_length_exceeded",
    };
  },
};

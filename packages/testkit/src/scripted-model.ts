// A scripted OpenAI-compatible Chat Completions server: the one stand-in for an LLM in every
// test (engine, drone, server, browser). Real node:http, real SSE, replies scripted by the test.
import { once } from "node:events";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

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

/**
 * Starts a scripted OpenAI-compatible server on 127.0.0.1 and a free port. It speaks
 * `POST /v1/chat/completions` (JSON, or SSE when `stream: true`) and `GET /v1/models`.
 * Replies come from the queue first, then from the handler; with neither, the request gets a
 * 500 whose message says no reply was scripted.
 *
 * @example
 * const model = await startScriptedModel();
 * model.enqueue(
 *   { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] },
 *   (request) => ({ text: `The README says: ${request.lastText.slice(0, 20)}` }),
 * );
 * const client = new OpenAI({ baseURL: model.baseUrl, apiKey: "test" });
 * // … run the code under test …
 * expect(model.chatRequests[1]?.messages.at(-1)?.role).toBe("tool");
 * await model.close();
 */
export async function startScriptedModel(
  options: ScriptedModelOptions = {},
): Promise<ScriptedModel> {
  const queue: Array<ScriptedReply | ReplyFunction> = [...(options.replies ?? [])];
  let handler = options.handler;
  const requests: RecordedRequest[] = [];
  const chatRequests: ChatRequestBody[] = [];
  const waiters = new Set<() => void>();
  const models = options.models ?? ["scripted-model"];
  let responseCount = 0;

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) {
        sendJson(response, 500, {
          error: { message: `testkit: ${String(error)}`, type: "server_error" },
        });
      } else {
        response.destroy();
      }
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    const method = request.method ?? "GET";
    const record: RecordedRequest = {
      index: requests.length,
      method,
      path,
      headers: request.headers,
      body: undefined,
      receivedAt: Date.now(),
    };
    requests.push(record);

    if (
      options.apiKey !== undefined &&
      request.headers.authorization !== `Bearer ${options.apiKey}`
    ) {
      await readBody(request);
      sendError(response, scriptedErrors.unauthorized());
      return;
    }

    if (method === "GET" && (path === "/v1/models" || path === "/models")) {
      sendJson(response, 200, {
        object: "list",
        data: models.map((id) => ({ id, object: "model", created: 0, owned_by: "testkit" })),
      });
      return;
    }

    if (method !== "POST" || (path !== "/v1/chat/completions" && path !== "/chat/completions")) {
      await readBody(request);
      sendJson(response, 404, {
        error: { message: `testkit: no route ${method} ${path}`, type: "invalid_request_error" },
      });
      return;
    }

    const raw = await readBody(request);
    let body: ChatRequestBody;
    try {
      body = JSON.parse(raw) as ChatRequestBody;
    } catch {
      sendJson(response, 400, {
        error: { message: "testkit: body is not JSON", type: "invalid_request_error" },
      });
      return;
    }
    record.body = body;
    const chatIndex = chatRequests.length;
    chatRequests.push(body);
    for (const wake of waiters) wake();

    const scripted = toScriptedRequest(chatIndex, body, request.headers);
    const reply = await nextReply(scripted);
    if (!reply) {
      sendError(response, {
        status: 500,
        message: `testkit: no scripted reply for chat request #${chatIndex} (queue empty, no handler)`,
        type: "server_error",
      });
      return;
    }
    if (reply.delayMs) await sleepUnlessClosed(reply.delayMs, response);
    if (response.destroyed) return;
    if (reply.error) {
      sendError(response, reply.error);
      return;
    }
    responseCount += 1;
    const answer = buildAnswer(reply, body, chatIndex, `chatcmpl-testkit-${responseCount}`);
    if (body.stream) await streamAnswer(response, reply, answer);
    else sendJson(response, 200, answer.json);
  }

  async function nextReply(request: ScriptedRequest): Promise<ScriptedReply | undefined> {
    const next = queue.shift();
    if (next !== undefined) {
      const reply = typeof next === "function" ? await next(request) : next;
      if (reply) return reply;
    }
    return handler ? await handler(request) : undefined;
  }

  server.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;

  return {
    baseUrl: `http://${host}:${address.port}/v1`,
    requests,
    chatRequests,
    enqueue(...replies) {
      queue.push(...replies);
    },
    setHandler(next) {
      handler = next;
    },
    pendingReplies() {
      return queue.length;
    },
    waitForRequests(count, timeoutMs = 5000) {
      if (chatRequests.length >= count) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (chatRequests.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `testkit: ${chatRequests.length} of ${count} chat requests after ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
      });
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function toScriptedRequest(
  index: number,
  body: ChatRequestBody,
  headers: IncomingHttpHeaders,
): ScriptedRequest {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const lastMessage = messages.at(-1);
  return {
    index,
    body,
    headers,
    lastMessage,
    lastText: messageText(lastMessage),
    hasTools: Array.isArray(body.tools) && body.tools.length > 0,
  };
}

/** Text of a request message, with content parts joined. */
export function messageText(message: RequestMessage | undefined): string {
  if (!message) return "";
  const { content } = message;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? "").join("");
  return "";
}

interface BuiltAnswer {
  json: Record<string, unknown>;
  chunks: Array<Record<string, unknown>>;
}

function buildAnswer(
  reply: ScriptedReply,
  body: ChatRequestBody,
  requestIndex: number,
  id: string,
): BuiltAnswer {
  const model = reply.model ?? body.model ?? "scripted-model";
  const created = Math.floor(Date.now() / 1000);
  const text = reply.text ?? "";
  const reasoning = reply.reasoning ?? "";
  const reasoningField = reply.reasoningField ?? "reasoning_content";
  const calls = (reply.toolCalls ?? []).map((call, position) => ({
    id: call.id ?? `call_${requestIndex}_${position}`,
    name: call.name,
    arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
  }));
  const finishReason = reply.finishReason ?? (calls.length > 0 ? "tool_calls" : "stop");
  const usage =
    reply.usage === undefined ? estimateUsage(body, text, reasoning, calls) : reply.usage;
  const usageJson = usage ? toUsageJson(usage) : undefined;

  const message: Record<string, unknown> = { role: "assistant", content: text || null };
  if (reasoning) message[reasoningField] = reasoning;
  if (calls.length > 0)
    message.tool_calls = calls.map((call) => ({
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: call.arguments },
    }));
  const json: Record<string, unknown> = {
    id,
    object: "chat.completion",
    created,
    model,
    choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
  };
  if (usageJson) json.usage = usageJson;

  const size = Math.max(1, reply.chunkSize ?? 8);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });
  const chunks: Array<Record<string, unknown>> = [chunk({ role: "assistant", content: "" })];
  for (const piece of split(reasoning, size)) chunks.push(chunk({ [reasoningField]: piece }));
  for (const piece of split(text, size)) chunks.push(chunk({ content: piece }));

  const perCall = calls.map((call, index) => {
    const pieces: Array<Record<string, unknown>> = [
      { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } },
    ];
    for (const piece of split(call.arguments, size))
      pieces.push({ index, function: { arguments: piece } });
    return pieces;
  });
  if (reply.interleaveToolCalls) {
    const longest = Math.max(0, ...perCall.map((pieces) => pieces.length));
    for (let step = 0; step < longest; step += 1)
      for (const pieces of perCall) {
        const piece = pieces[step];
        if (piece) chunks.push(chunk({ tool_calls: [piece] }));
      }
  } else {
    for (const pieces of perCall)
      for (const piece of pieces) chunks.push(chunk({ tool_calls: [piece] }));
  }
  chunks.push(chunk({}, finishReason));
  if (usageJson && body.stream_options?.include_usage)
    chunks.push({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [],
      usage: usageJson,
    });
  return { json, chunks };
}

function split(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size)
    pieces.push(text.slice(start, start + size));
  return pieces;
}

function estimateUsage(
  body: ChatRequestBody,
  text: string,
  reasoning: string,
  calls: Array<{ name: string; arguments: string }>,
): ScriptedUsage {
  const promptChars =
    JSON.stringify(body.messages ?? []).length + JSON.stringify(body.tools ?? []).length;
  const callChars = calls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  const reasoningTokens = Math.ceil(reasoning.length / 4);
  return {
    promptTokens: Math.ceil(promptChars / 4),
    completionTokens: Math.ceil((text.length + callChars) / 4) + reasoningTokens,
    reasoningTokens,
    cachedTokens: 0,
  };
}

function toUsageJson(usage: ScriptedUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
  };
}

async function streamAnswer(
  response: ServerResponse,
  reply: ScriptedReply,
  answer: BuiltAnswer,
): Promise<void> {
  response.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  response.flushHeaders();
  const stopAfter =
    reply.hang || reply.dropAfterChunks !== undefined
      ? (reply.dropAfterChunks ?? reply.hangAfterChunks ?? 0)
      : Number.POSITIVE_INFINITY;
  let sent = 0;
  for (const chunk of answer.chunks) {
    if (sent >= stopAfter) break;
    if (sent > 0 && reply.chunkDelayMs) await sleepUnlessClosed(reply.chunkDelayMs, response);
    if (response.destroyed) return;
    response.write(`data: ${JSON.stringify(chunk)}\n\n`);
    sent += 1;
  }
  if (reply.dropAfterChunks !== undefined) {
    response.destroy();
    return;
  }
  if (reply.hang) {
    if (!response.destroyed) await once(response, "close");
    return;
  }
  response.end("data: [DONE]\n\n");
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

function sendError(response: ServerResponse, error: ScriptedError): void {
  const body = error.body ?? {
    error: {
      message: error.message ?? `HTTP ${error.status}`,
      type: error.type ?? "invalid_request_error",
      param: null,
      code: error.code ?? null,
    },
  };
  sendJson(response, error.status, body, error.headers);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

function sleepUnlessClosed(ms: number, response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      response.off("close", done);
      resolve();
    }
    response.once("close", done);
  });
}

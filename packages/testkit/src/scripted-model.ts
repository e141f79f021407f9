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
import {
  buildAnswer,
  readBody,
  sendError,
  sendJson,
  sleepUnlessClosed,
  streamAnswer,
  streamRecorded,
} from "./chat-completions-wire.ts";
import {
  type ChatRequestBody,
  type RecordedRequest,
  type ReplyFunction,
  type RequestMessage,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedReply,
  type ScriptedRequest,
  scriptedErrors,
} from "./scripted-model-types.ts";

export * from "./scripted-model-types.ts";

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
    if (reply.recorded !== undefined) {
      await streamRecorded(response, { ...reply, recorded: reply.recorded });
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
    clear() {
      queue.length = 0;
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

// The Chat Completions wire as the stand-in model speaks it: a scripted reply built into a JSON
// answer or SSE chunks, usage estimated when the test gives none, errors in a provider's shape.
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type {
  ChatRequestBody,
  ScriptedError,
  ScriptedReply,
  ScriptedUsage,
} from "./scripted-model-types.ts";

export interface BuiltAnswer {
  json: Record<string, unknown>;
  chunks: Array<Record<string, unknown>>;
}

export function buildAnswer(
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

export function split(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size)
    pieces.push(text.slice(start, start + size));
  return pieces;
}

export function estimateUsage(
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

export function toUsageJson(usage: ScriptedUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
  };
}

export async function streamAnswer(
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

/** Streams a recorded SSE body byte for byte, cut into events or into `recordedChunkBytes` pieces. */
export async function streamRecorded(
  response: ServerResponse,
  reply: ScriptedReply & { recorded: string },
): Promise<void> {
  response.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  response.flushHeaders();
  const bytes = Buffer.from(reply.recorded, "utf8");
  const pieces =
    reply.recordedChunkBytes !== undefined
      ? splitBytes(bytes, Math.max(1, reply.recordedChunkBytes))
      : splitEvents(bytes);
  let sent = 0;
  for (const piece of pieces) {
    if (sent > 0 && reply.chunkDelayMs) await sleepUnlessClosed(reply.chunkDelayMs, response);
    if (response.destroyed) return;
    response.write(piece);
    sent += 1;
  }
  response.end();
}

function splitBytes(bytes: Buffer, size: number): Buffer[] {
  const pieces: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += size)
    pieces.push(bytes.subarray(start, start + size));
  return pieces;
}

/** Cuts after each blank line (`\n\n`, `\r\n\r\n` or `\r\r`), keeping every byte. */
function splitEvents(bytes: Buffer): Buffer[] {
  const text = bytes.toString("latin1");
  const pieces: Buffer[] = [];
  const boundary = /\r\n\r\n|\n\n|\r\r/g;
  let start = 0;
  for (const match of text.matchAll(boundary)) {
    const end = match.index + match[0].length;
    pieces.push(bytes.subarray(start, end));
    start = end;
  }
  if (start < bytes.length) pieces.push(bytes.subarray(start));
  return pieces;
}

export function sendJson(
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

export function sendError(response: ServerResponse, error: ScriptedError): void {
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

export async function readBody(request: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

export function sleepUnlessClosed(ms: number, response: ServerResponse): Promise<void> {
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

// A check's probe: one small streamed call offering one tool, as a turn would send it (the
// provider's params and quirks applied, documented rejections adapted to), to tell the user what
// the provider does with streaming, tool calls, reasoning and usage before a turn needs them.
import {
  type ModelParams,
  type ProviderCheckResult,
  type ProviderQuirkCode,
  splitThinking,
} from "@gadget/protocol";
import { linkedController } from "./abort.ts";
import { type ChatModel, type ChatRequest, openAIChatModel } from "./chat-model.ts";
import { probeImages } from "./image-probe.ts";
import { callModel, type ModelReply } from "./model-call.ts";
import { ProviderError } from "./provider-error.ts";
import type { LearnedQuirk } from "./rejections.ts";
import { clip } from "./text.ts";
import type { EngineLogger } from "./turn-input.ts";

/** The probe's answer may not be longer than this (bytes of streamed chunks). */
export const maxProbeAnswerBytes = 256 * 1024;

export interface ProbeOptions {
  baseUrl: string;
  apiKey: string;
  modelId: string;
  /** The provider's params: its turns send them, so the probe does too. */
  params?: ModelParams | undefined;
  /** Quirks known already (applied from the first request). */
  quirks?: ProviderQuirkCode[] | undefined;
  /** The whole probe, adaptations included. Default 20 000 ms. */
  timeoutMs?: number;
  /** The `fetch` the openai client uses (the server's goes through its outbound policy). */
  fetch?: typeof fetch;
  /** Replaces the openai client (tests). */
  model?: ChatModel;
}

export interface ProbeOutcome {
  probe: NonNullable<ProviderCheckResult["probe"]>;
  /** Quirks learned during the probe, with the provider's words. */
  learned: LearnedQuirk[];
}

const probeTool = {
  type: "function" as const,
  function: {
    name: "report_weather",
    description: "Reports the weather of a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string", description: "The city's name" } },
      required: ["city"],
    },
  },
};

const silentLogger: EngineLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * Probes the provider; never throws (a failure is the probe's `message`).
 * @example const { probe, learned } = await probeProvider({ baseUrl, apiKey, modelId: "gpt-5" });
 */
export async function probeProvider(options: ProbeOptions): Promise<ProbeOutcome> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const link = linkedController(AbortSignal.timeout(timeoutMs));
  const counted = countingModel(
    options.model ??
      openAIChatModel({
        baseUrl: options.baseUrl,
        apiKey: options.apiKey,
        timeoutMs,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      }),
    () => link.controller.abort(new Error("answer too large")),
  );
  const params = options.params ?? {};
  const request: ChatRequest = {
    model: options.modelId,
    messages: [
      { role: "system", content: "You are checking that tool calls work. Use the tool offered." },
      {
        role: "user",
        content: 'Call report_weather with the city "Paris". Do not answer in text.',
      },
    ],
    tools: [probeTool],
    ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
    ...(params.topP === undefined ? {} : { topP: params.topP }),
    ...(params.topK === undefined ? {} : { topK: params.topK }),
    ...(params.maxTokens === undefined ? {} : { maxTokens: params.maxTokens }),
  };
  const learned: LearnedQuirk[] = [];
  const calls = callModel(request, {
    model: counted.model,
    signal: link.controller.signal,
    // A check answers quickly or says why not: no backoff.
    retry: { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, maxRetryAfterMs: 0 },
    logger: silentLogger,
    emitText: false,
    callIdPrefix: "probe",
    quirks: new Set(options.quirks ?? []),
  });
  try {
    let step = await calls.next();
    while (!step.done) {
      if (step.value.type === "provider_adapted") learned.push(step.value.data);
      step = await calls.next();
    }
    const probe = probeOf(step.value, counted.chunks());
    // The model answered: does it take an image part too?
    const { messages: _messages, tools: _tools, ...base } = request;
    const quirks = [...(options.quirks ?? []), ...learned.map((entry) => entry.quirk)];
    Object.assign(
      probe,
      await probeImages(counted.model, { ...base, quirks }, link.controller.signal),
    );
    return { probe, learned };
  } catch (error) {
    return {
      probe: {
        streaming: counted.chunks() > 0,
        toolCalling: false,
        reasoning: false,
        usage: false,
        message: failureOf(error, link.controller.signal),
      },
      learned,
    };
  } finally {
    link.dispose();
  }
}

function probeOf(reply: ModelReply, chunks: number): ProbeOutcome["probe"] {
  const call = reply.toolCalls.find((entry) => entry.name === probeTool.function.name);
  const probe: ProbeOutcome["probe"] = {
    streaming: chunks > 0,
    toolCalling: call !== undefined && parses(call.arguments),
    reasoning: reply.thinking.length > 0 || splitThinking(reply.text).thinking.length > 0,
    usage: !reply.usageEstimated,
  };
  if (!probe.toolCalling)
    probe.message = call
      ? "The model called the tool, but its arguments are not JSON"
      : "The model answered without calling the tool offered";
  return probe;
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function failureOf(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) {
    const reason = signal.reason as Error | undefined;
    return reason?.message === "answer too large"
      ? `The answer passed ${maxProbeAnswerBytes / 1024} KiB; the probe stopped reading`
      : "No answer in time";
  }
  if (error instanceof ProviderError) return clip(error.message, 400);
  return "The probe call failed";
}

/** A model that counts the chunks it streams and stops past `maxProbeAnswerBytes`. */
function countingModel(inner: ChatModel, tooLarge: () => void) {
  let chunks = 0;
  let bytes = 0;
  const model: ChatModel = {
    async *stream(request, options) {
      for await (const chunk of inner.stream(request, options)) {
        chunks += 1;
        bytes += JSON.stringify(chunk).length;
        if (bytes > maxProbeAnswerBytes) {
          tooLarge();
          return;
        }
        yield chunk;
      }
    },
  };
  return { model, chunks: () => chunks };
}

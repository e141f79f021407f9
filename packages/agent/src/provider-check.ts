// "Check" a provider: ask its `/models` with the key, as the OpenAI SDK would, and say in words
// what is wrong. One interpretation for both places a check runs — a user's drone (which reaches
// what the user's turns reach) and the server (through its outbound policy) — each with its own
// way to send the request. The answer never echoes the provider's body beyond model ids.
import { type ProviderCheckResult, SystemError } from "@gadget/protocol";
import { type ProbeOptions, probeProvider } from "./provider-probe.ts";
import type { LearnedQuirk } from "./rejections.ts";

/** Model lists bigger than this are not read (a hostile "provider" can stream forever). */
export const maxModelListBytes = 1024 * 1024;
const maxModelsShown = 200;

/** What a check's sender brings back: the status, and the body unless it was too large. */
export interface ModelListAnswer {
  status: number;
  /** Null when the body passed `maxModelListBytes` (the sender stopped reading there). */
  body: Uint8Array | null;
}

/**
 * Sends `GET url` with `headers` and reads at most `maxModelListBytes`. Throws `Unreachable`
 * (whose message the user sees) when no answer came.
 */
export type ModelListSender = (
  url: string,
  headers: Record<string, string>,
) => Promise<ModelListAnswer>;

/** No HTTP answer: the message is what the user reads, so a sender decides how much it says. */
export class Unreachable extends SystemError {
  constructor(message: string) {
    super("unavailable", message);
  }
}

export interface ProviderCheckOptions {
  baseUrl: string;
  apiKey: string;
  modelId?: string | undefined;
}

/**
 * Asks `<baseUrl>/models` through `send` and reports what the provider offers.
 * @example await checkProvider({ baseUrl, apiKey, modelId: "gpt-5" }, fetchModelList());
 */
export async function checkProvider(
  options: ProviderCheckOptions,
  send: ModelListSender,
): Promise<ProviderCheckResult> {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/models`;
  let answer: ModelListAnswer;
  try {
    answer = await send(url, {
      accept: "application/json",
      ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
    });
  } catch (error) {
    const reason = error instanceof Unreachable ? error.message : "the request failed";
    return { ok: false, message: `Could not reach ${url}: ${reason}` };
  }
  if (answer.status === 401 || answer.status === 403) {
    return {
      ok: false,
      message: `${url} refused the API key (HTTP ${answer.status}); check the key`,
    };
  }
  if (answer.status < 200 || answer.status >= 300) {
    return {
      ok: false,
      message: `${url} answered HTTP ${answer.status}; is the base URL right (it usually ends in /v1)?`,
    };
  }
  const models = answer.body ? modelIds(answer.body) : null;
  if (models === null) {
    return {
      ok: false,
      message: `${url} did not answer an OpenAI-compatible model list; is the base URL right?`,
    };
  }
  if (options.modelId && models.length > 0 && !models.includes(options.modelId)) {
    return {
      ok: false,
      models: models.slice(0, maxModelsShown),
      message: `The provider answered, but does not offer "${options.modelId}"`,
    };
  }
  return {
    ok: true,
    models: models.slice(0, maxModelsShown),
    message: `Reached ${url}: ${models.length} model${models.length === 1 ? "" : "s"}`,
  };
}

/** How a saved provider's check probes it: what its turns send, and how to reach it. */
export type ProbeSettings = Omit<ProbeOptions, "baseUrl" | "apiKey" | "modelId">;

/**
 * A saved provider's check: `/models` through `send`, then, once that answered, the probe (one
 * small streamed call offering one tool). Answers the check with `probe` and the quirks learned,
 * and the learned quirks with the provider's words, for the provider to remember.
 * @example const { result, learned } = await checkAndProbe(options, fetchModelList(), { quirks });
 */
export async function checkAndProbe(
  options: ProviderCheckOptions,
  send: ModelListSender,
  probe: ProbeSettings | undefined,
): Promise<{ result: ProviderCheckResult; learned: LearnedQuirk[] }> {
  const result = await checkProvider(options, send);
  if (!probe || !result.ok || !options.modelId) return { result, learned: [] };
  const outcome = await probeProvider({
    ...probe,
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    modelId: options.modelId,
  });
  return {
    result: {
      ...result,
      probe: outcome.probe,
      quirks: outcome.learned.map((learned) => learned.quirk),
    },
    learned: outcome.learned,
  };
}

/** The `data[].id` of an OpenAI model list, or null when the body is not one. */
function modelIds(body: Uint8Array): string[] | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    return null;
  }
  const data = (parsed as { data?: unknown })?.data;
  if (!Array.isArray(data)) return null;
  return data
    .map((model) => (model as { id?: unknown })?.id)
    .filter((id): id is string => typeof id === "string" && id.length <= 200)
    .sort();
}

/**
 * Reads a response body up to `maxBytes`, cancelling the stream past it: null when too large.
 * A `content-length` is not trusted; the bytes are counted.
 */
export async function readAtMost(response: Response, maxBytes: number): Promise<Uint8Array | null> {
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/**
 * A sender with the platform's `fetch`, for a drone: it checks from the user's own machine, so
 * it may say why a connection failed (the network it describes is the user's).
 */
export function fetchModelList(timeoutMs = 10_000): ModelListSender {
  return async (url, headers) => {
    let response: Response;
    try {
      // Redirects could lead anywhere; a provider's API does not need them.
      response = await fetch(url, {
        headers,
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new Unreachable(fetchFailure(error));
    }
    const body = await readAtMost(response, maxModelListBytes).catch(() => null);
    return { status: response.status, body };
  };
}

function fetchFailure(error: unknown): string {
  if (error instanceof Error && error.name === "TimeoutError") return "no answer in time";
  const cause = (error as { cause?: { code?: string } })?.cause;
  return cause?.code ?? "the connection failed";
}

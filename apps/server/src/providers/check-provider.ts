// "Check" for a provider: the browser cannot call a provider's `/models` itself (CORS), so the
// server does, and answers in words. The key is only sent to the provider; the answer never
// echoes the provider's body, so a check cannot be used to read arbitrary pages.
import type { ProviderCheckResult } from "@gadget/protocol";

const maxBodyBytes = 1024 * 1024;
const maxModelsShown = 200;

export interface CheckOptions {
  baseUrl: string;
  apiKey: string;
  modelId?: string | undefined;
  timeoutMs?: number;
}

/**
 * Asks `<baseUrl>/models` with the key, as the OpenAI SDK would, and reports what it offers.
 * @example await checkProvider({ baseUrl: "https://api.openai.com/v1", apiKey, modelId: "gpt-5" });
 */
export async function checkProvider(options: CheckOptions): Promise<ProviderCheckResult> {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/models`;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: {
        accept: "application/json",
        ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      },
      // Redirects could lead the server anywhere; a provider's API does not need them.
      redirect: "manual",
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
  } catch (error) {
    return { ok: false, message: `Could not reach ${url}: ${reason(error)}` };
  }
  if (response.status === 401 || response.status === 403) {
    await response.body?.cancel();
    return {
      ok: false,
      message: `${url} refused the API key (HTTP ${response.status}); check the key`,
    };
  }
  if (!response.ok) {
    await response.body?.cancel();
    return {
      ok: false,
      message: `${url} answered HTTP ${response.status}; is the base URL right (it usually ends in /v1)?`,
    };
  }
  const models = await readModelIds(response);
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

/** The `data[].id` of an OpenAI model list, or null when the body is not one. */
async function readModelIds(response: Response): Promise<string[] | null> {
  const length = Number(response.headers.get("content-length") ?? 0);
  if (length > maxBodyBytes) {
    await response.body?.cancel();
    return null;
  }
  let body: unknown;
  try {
    const text = await response.text();
    if (text.length > maxBodyBytes) return null;
    body = JSON.parse(text);
  } catch {
    return null;
  }
  const data = (body as { data?: unknown })?.data;
  if (!Array.isArray(data)) return null;
  return data
    .map((model) => (model as { id?: unknown })?.id)
    .filter((id): id is string => typeof id === "string")
    .sort();
}

function reason(error: unknown): string {
  if (error instanceof Error && error.name === "TimeoutError") return "no answer in time";
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

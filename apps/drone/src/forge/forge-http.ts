// One JSON request to a forge's REST API: the token in the forge's own header, a timeout, the
// answer read up to a limit, and the forge's own error message picked out of its answer.
import type { WorkOrderForge } from "@gadget/protocol";

/** A forge's answer: its status and parsed JSON (null when empty). */
export interface ForgeAnswer {
  status: number;
  json: unknown;
}

export type ForgeCall = (method: string, path: string, body?: object) => Promise<ForgeAnswer>;

/** An answer larger than this is cut: a pull request's JSON is a few kilobytes. */
const maxAnswerBytes = 1024 * 1024;

/** Whether the forge said yes: Gitea answers an update with 201, GitHub with 200. */
export function succeeded(answer: ForgeAnswer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/** How each forge takes its token. */
function authorization(forge: WorkOrderForge): Record<string, string> {
  switch (forge.kind) {
    case "github":
      return {
        Authorization: `Bearer ${forge.token}`,
        Accept: "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
      };
    case "gitea":
      return { Authorization: `token ${forge.token}`, Accept: "application/json" };
    case "gitlab":
      return { "PRIVATE-TOKEN": forge.token };
  }
}

/** Requests to the forge's API under its `apiUrl`, each within `timeoutMs` (default 15 000 ms). */
export function forgeCaller(forge: WorkOrderForge, timeoutMs = 15_000): ForgeCall {
  const base = forge.apiUrl.replace(/\/+$/, "");
  const headers = authorization(forge);
  return async (method, path, body) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...headers,
        "User-Agent": "gadget-drone",
        ...(body ? { "Content-Type": "application/json" } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: "error",
    });
    const text = await readCapped(response);
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = { message: text.slice(0, 200) };
    }
    return { status: response.status, json };
  };
}

/** The answer's text, at most maxAnswerBytes of it (the rest is dropped unread). */
async function readCapped(response: Response): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size >= maxAnswerBytes) {
      await reader.cancel();
      break;
    }
  }
  return Buffer.concat(chunks).toString("utf8").slice(0, maxAnswerBytes);
}

/** The message in a GitHub (`message`, `errors`), Gitea (`message`) or GitLab (`message`, `error`) error answer. */
export function messageOf(json: unknown): string {
  if (!json || typeof json !== "object") return "";
  const answer = json as { message?: unknown; error?: unknown; errors?: unknown };
  const parts: string[] = [];
  const add = (value: unknown) => {
    if (typeof value === "string") parts.push(value);
    else if (Array.isArray(value)) for (const item of value) add(item);
    else if (value && typeof value === "object") {
      const entry = value as { message?: unknown; field?: unknown; code?: unknown };
      if (typeof entry.message === "string") parts.push(entry.message);
      else if (typeof entry.field === "string") parts.push(`${entry.field} ${String(entry.code)}`);
      else parts.push(JSON.stringify(value));
    }
  };
  add(answer.message);
  add(answer.error);
  add(answer.errors);
  // Gitea repeats its message in `errors`.
  return [...new Set(parts.filter(Boolean))].join("; ").slice(0, 300);
}

/** Why a request never got an answer (fetch's cause says more than "fetch failed"). */
export function unreachableReason(error: unknown): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return "no answer in time";
  }
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

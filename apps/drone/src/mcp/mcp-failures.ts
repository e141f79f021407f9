// How an MCP server's failure is told and sorted: its cause in one line a user can act on (the
// host and network error code of an unreachable URL, the meaningful end of a stdio server's
// stderr, never an HTML page), and which failures a reconnect or the old SSE transport can mend.
import { redactSecrets } from "@gadget/tools";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

/** Longest cause kept in a warning or a tool's error. */
const maxCause = 300;
/** Lines of a server's stderr kept to explain it, and their length in all. */
const stderrLines = 4;
const maxStderr = 600;

/** Lines that end most failures and say nothing of their cause. */
const noise = [
  /^Node\.js v\d/,
  /A complete log of this run can be found/,
  /^\s+at\s/,
  /^npm (ERR!|error)\s*$/,
];

/** `text` as one line: tags of an HTML page dropped, whitespace folded, at most `max` characters. */
export function oneLine(text: string, max = maxCause): string {
  const flat = (/<\/?[a-z!][^>]*>/i.test(text) ? text.replace(/<[^>]*>/g, " ") : text)
    .replace(/\s+/g, " ")
    .trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The network error code under a failed fetch (`ECONNREFUSED`, `EAI_AGAIN`, …), if any. */
function networkCode(error: unknown): string | undefined {
  let current = error as { code?: unknown; cause?: unknown; errors?: unknown[] } | undefined;
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === "string" && /^(E[A-Z_]+|UND_ERR_[A-Z_]+)$/.test(current.code)) {
      return current.code;
    }
    current = (current.cause ?? current.errors?.[0]) as typeof current;
  }
  return undefined;
}

/** Why a call or a start failed, in one line; `url` names the host of a remote server. */
export function failureCause(error: unknown, url?: string): string {
  const code = networkCode(error);
  if (url && code) return `cannot reach ${new URL(url).host} (${code})`;
  // fetch's own refusals (a port it will not use, a malformed address) come without a code.
  const cause = (error as { cause?: { message?: unknown } } | undefined)?.cause?.message;
  if (url && error instanceof TypeError && typeof cause === "string") {
    return `cannot reach ${new URL(url).host}: ${oneLine(cause)}`;
  }
  return oneLine((error as Error | undefined)?.message ?? String(error));
}

/** The last few lines of a server's stderr that say something, secrets redacted, bounded. */
export function stderrSummary(stderr: string, secretValues: readonly string[]): string {
  const lines = stderr
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() && !noise.some((pattern) => pattern.test(line)));
  const kept = lines
    .slice(-stderrLines)
    .map((line) => line.trim())
    .join(" | ");
  const text = redactSecrets(kept, secretValues);
  return text.length > maxStderr ? `…${text.slice(-(maxStderr - 1))}` : text;
}

/** A remote server that no longer knows the session (it restarted): a new session mends it. */
export function sessionGone(error: unknown): boolean {
  if (!(error instanceof StreamableHTTPError)) return false;
  return error.code === 404 || (error.code === 400 && /session/i.test(error.message));
}

/** Streamable HTTP refused as such (4xx on POST, not for credentials): maybe an HTTP+SSE server. */
export function mayBeSseServer(error: unknown): boolean {
  if (!(error instanceof StreamableHTTPError) || error.code === undefined) return false;
  return error.code >= 400 && error.code < 500 && error.code !== 401 && error.code !== 403;
}

/** Errors that mean the server's process went away under a call (not the tool failing). */
const goneCodes = new Set([
  "EPIPE",
  "ERR_STREAM_DESTROYED",
  "ERR_STREAM_WRITE_AFTER_END",
  "ECONNRESET",
]);

export function serverGone(error: unknown): boolean {
  if (error instanceof McpError) return error.code === ErrorCode.ConnectionClosed;
  return goneCodes.has((error as NodeJS.ErrnoException | undefined)?.code ?? "");
}

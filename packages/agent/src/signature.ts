// Tool-call signatures: name + canonical JSON arguments, hashed so thousands stay cheap to keep.
import { createHash } from "node:crypto";

/** JSON with object keys sorted at every depth, so `{a,b}` and `{b,a}` read the same. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, field]) => field !== undefined)
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  return `{${entries.map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`).join(",")}}`;
}

/**
 * Identifies a call by tool name and arguments. Unparseable arguments are hashed verbatim,
 * so the same malformed call repeated is still recognised.
 */
export function toolCallSignature(name: string, rawArguments: string, parsed: unknown): string {
  const body = parsed === undefined ? `raw:${rawArguments}` : canonicalJson(parsed);
  const digest = createHash("sha1").update(body).digest("base64url").slice(0, 16);
  return `${name}:${digest}`;
}

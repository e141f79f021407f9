// Tool-call ids for providers that accept only 9 letters or digits (Mistral). Ids the model or an
// earlier provider made (`call_abc…`, `call-2-1`) are rewritten in the request only; what is
// stored keeps the original ids, so a turn can move between providers.
import { createHash } from "node:crypto";

const shortIdPattern = /^[A-Za-z0-9]{9}$/;
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/**
 * One request's mapping from original ids to short ones. Deterministic (a hash of the id), so
 * the same history maps the same way on every call and the provider's prompt cache holds; ids
 * already valid are kept, and a collision takes the hash of the id with a counter.
 */
export class ShortToolCallIds {
  private readonly byOriginal = new Map<string, string>();
  private readonly taken = new Set<string>();

  /** Keeps the ids that are already valid, so no rewritten id can take one of them. */
  constructor(ids: Iterable<string>) {
    for (const id of ids) {
      if (!shortIdPattern.test(id) || this.byOriginal.has(id)) continue;
      this.byOriginal.set(id, id);
      this.taken.add(id);
    }
  }

  /** The short id for `id` (the same answer each time). */
  of(id: string): string {
    const known = this.byOriginal.get(id);
    if (known) return known;
    let short = hashId(id);
    for (let attempt = 1; this.taken.has(short); attempt += 1) short = hashId(`${id}#${attempt}`);
    this.byOriginal.set(id, short);
    this.taken.add(short);
    return short;
  }
}

function hashId(text: string): string {
  const digest = createHash("sha256").update(text).digest();
  let id = "";
  for (let index = 0; index < 9; index += 1) id += alphabet[digest[index]! % alphabet.length];
  return id;
}

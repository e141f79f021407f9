// What the database can store of free-form event data (a tool's params, a debug detail): keys
// without NUL, a leading `$` or a `.`, bounded depth, bounded strings. The server refuses anything
// else at the edge (that batch alone); the drone makes its own events storable before sending.

export const storableLimits = {
  /** Deepest nesting of objects and arrays the server takes. */
  maxDepth: 64,
  /** Longest string the server takes in event data, in characters. */
  maxStringLength: 2 * 1024 * 1024,
  /** Nesting the drone keeps before turning the rest into JSON text. */
  keepDepth: 32,
  /** Longest string the drone sends in event data (the model and the tool still get all of it). */
  keepStringLength: 64 * 1024,
} as const;

/** One reason a value cannot be stored, located by its path. */
export interface StorableIssue {
  path: Array<string | number>;
  message: string;
}

/** Why a key cannot be a stored field name, or null. */
function keyProblem(key: string): string | null {
  if (key.includes("\0")) return "field names must not contain NUL";
  if (key.startsWith("$")) return 'field names must not start with "$"';
  if (key.includes(".")) return 'field names must not contain "."';
  return null;
}

/**
 * The first reason `value` cannot be stored as event data, or null.
 * @example storableIssue({ params: { "a.b": 1 } }) // { path: ["params", "a.b"], message: … }
 */
export function storableIssue(
  value: unknown,
  options: { maxStringLength?: number } = {},
  path: Array<string | number> = [],
): StorableIssue | null {
  if (path.length > storableLimits.maxDepth) {
    return { path, message: `nested more than ${storableLimits.maxDepth} levels deep` };
  }
  const maxString = options.maxStringLength ?? storableLimits.maxStringLength;
  if (typeof value === "string") {
    return value.length > maxString
      ? { path, message: `string longer than ${maxString} characters` }
      : null;
  }
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const issue = storableIssue(value[index], options, [...path, index]);
      if (issue) return issue;
    }
    return null;
  }
  if (value !== null && typeof value === "object" && !(value instanceof Date)) {
    for (const [key, item] of Object.entries(value)) {
      const problem = keyProblem(key);
      if (problem) return { path: [...path, key], message: problem };
      const issue = storableIssue(item, options, [...path, key]);
      if (issue) return issue;
    }
  }
  return null;
}

/** A key as it can be stored: `.` and a leading `$` as their full-width look-alikes, no NUL. */
function storableKey(key: string): string {
  let result = key.replaceAll("\0", "").replaceAll(".", "\uFF0E");
  if (result.startsWith("$")) result = `\uFF04${result.slice(1)}`;
  return result;
}

/**
 * A copy of `value` the server will store: unsafe keys renamed (`a.b` → `a．b`), strings past
 * 64 KiB cut with a note, nesting past 32 levels kept as JSON text. Values already storable come
 * back unchanged (the same object).
 * @example toStorable({ params: { "package.json": "…" } }) // { params: { "package．json": "…" } }
 */
export function toStorable<T>(value: T, depth = 0): T {
  if (typeof value === "string") {
    if (value.length <= storableLimits.keepStringLength) return value;
    const cut = value.length - storableLimits.keepStringLength;
    return `${value.slice(0, storableLimits.keepStringLength)}\n… [${cut} more characters not shown]` as T;
  }
  if (value === null || typeof value !== "object" || value instanceof Date) return value;
  if (depth >= storableLimits.keepDepth) {
    return toStorable(JSON.stringify(value), depth) as T;
  }
  if (Array.isArray(value)) {
    let changed = false;
    const items = value.map((item) => {
      const next = toStorable(item, depth + 1);
      if (next !== item) changed = true;
      return next;
    });
    return (changed ? items : value) as T;
  }
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const nextKey = keyProblem(key) ? storableKey(key) : key;
    const next = toStorable(item, depth + 1);
    if (nextKey !== key || next !== item) changed = true;
    return [nextKey, next] as const;
  });
  return (changed ? Object.fromEntries(entries) : value) as T;
}

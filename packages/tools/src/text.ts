// Small text helpers shared by the tools: binary detection, line cutting, counting, plurals.

/** Extensions that are binary whatever their first bytes say. */
const binaryExtensions = new Set([
  "png",
  "jpg",
  "jpeg",
  "gif",
  "webp",
  "ico",
  "bmp",
  "tiff",
  "pdf",
  "zip",
  "gz",
  "tgz",
  "bz2",
  "xz",
  "7z",
  "rar",
  "jar",
  "war",
  "class",
  "exe",
  "dll",
  "so",
  "dylib",
  "o",
  "a",
  "wasm",
  "woff",
  "woff2",
  "ttf",
  "otf",
  "eot",
  "mp3",
  "mp4",
  "mov",
  "avi",
  "webm",
  "wav",
  "ogg",
  "flac",
  "sqlite",
  "db",
  "pyc",
  "node",
]);

/** Whether a file looks binary: a known binary extension or a NUL byte in its first bytes. */
export function looksBinary(name: string, head: Uint8Array): boolean {
  const extension = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1).toLowerCase() : "";
  if (binaryExtensions.has(extension)) return true;
  return head.includes(0);
}

/** Cuts a line longer than `max` characters and says how much was cut. */
export function cutLine(line: string, max: number): string {
  if (line.length <= max) return line;
  return `${line.slice(0, max)}… [${line.length - max} more characters]`;
}

/** Shows a window of `max` characters around `[start, end)` of a long line. */
export function windowAround(line: string, start: number, end: number, max: number): string {
  if (line.length <= max) return line;
  const matchLength = Math.min(end - start, max);
  const before = Math.max(0, Math.floor((max - matchLength) / 2));
  const from = Math.max(0, Math.min(start - before, line.length - max));
  const to = Math.min(line.length, from + max);
  const prefix = from > 0 ? `[${from} characters]…` : "";
  const suffix = to < line.length ? `…[${line.length - to} characters]` : "";
  return `${prefix}${line.slice(from, to)}${suffix}`;
}

/** "1 line" / "3 lines"; nouns ending in s, x, ch or sh take "es". */
export function plural(count: number, noun: string): string {
  if (count === 1) return `${count} ${noun}`;
  return `${count} ${noun}${/(s|x|ch|sh)$/.test(noun) ? "es" : "s"}`;
}

/** Number of newline characters in a text. */
export function countNewlines(text: string): number {
  let count = 0;
  let index = text.indexOf("\n");
  while (index !== -1) {
    count++;
    index = text.indexOf("\n", index + 1);
  }
  return count;
}

/** Number of lines in a text as an editor counts them (a final newline ends, not starts, a line). */
export function countLines(text: string): number {
  if (text.length === 0) return 0;
  const count = countNewlines(text);
  return text.endsWith("\n") ? count : count + 1;
}

/** Formats a byte count for people: 512 B, 12.3 KiB, 4.0 MiB. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Right-aligned line number and a tab, as `cat -n` prints them. */
export function numberLine(lineNumber: number, text: string): string {
  return `${String(lineNumber).padStart(6, " ")}\t${text}`;
}

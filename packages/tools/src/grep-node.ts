// The grep engine without ripgrep: a streaming search in Node that gives the same result.
// Files are read in chunks; a chunk is split into lines only when the pattern occurs in it.
// Small files are read synchronously in time slices; large ones are streamed asynchronously.
import { closeSync, constants, openSync, readSync } from "node:fs";
import { open, stat } from "node:fs/promises";
import { ToolError } from "@gadget/agent";
import picomatch from "picomatch";
import type { GrepFile, GrepLine, GrepQuery, GrepResult } from "./grep-result.ts";
import { countNewlines, windowAround } from "./text.ts";
import { walk } from "./walk.ts";
import { toRelative } from "./workspace-path.ts";

const chunkSize = 256 * 1024;

/** Compiles the pattern as a JavaScript regular expression (Unicode mode when it needs it). */
export function compilePattern(pattern: string, ignoreCase: boolean, flags = ""): RegExp {
  const base = `${flags}${ignoreCase ? "i" : ""}`;
  try {
    return new RegExp(pattern, base);
  } catch (first) {
    try {
      return new RegExp(pattern, `${base}u`);
    } catch {
      throw new ToolError(
        "bad_pattern",
        `Invalid regular expression "${pattern}": ${(first as Error).message}. Escape special characters such as ( [ { . * + ? with a backslash to match them literally.`,
      );
    }
  }
}

interface Matchers {
  line: RegExp;
  /** Multiline version, to skip chunks without a match before splitting them into lines. */
  chunk: RegExp;
}

/** The last `count` lines of a text that ends with a newline, as context lines with their numbers. */
function lastLines(text: string, count: number, lastNumber: number, max: number): GrepLine[] {
  const result: GrepLine[] = [];
  let end = text.length - 1;
  for (let index = 0; index < count && end >= 0; index++) {
    const previous = end === 0 ? -1 : text.lastIndexOf("\n", end - 1);
    const line = text.slice(previous + 1, end).replace(/\r$/, "");
    result.unshift({ line: lastNumber - index, text: windowAround(line, 0, 0, max), match: false });
    end = previous;
  }
  return result;
}

/** Finds matching lines in a file fed to it chunk by chunk, with before/after context. */
class LineSearch {
  readonly lines: GrepLine[] = [];
  private before: GrepLine[] = [];
  private afterLeft = 0;
  private lineNumber = 0;
  private matches = 0;
  private carry: Buffer[] = [];
  /** True once the file turned out to be binary. */
  binary = false;
  private started = false;

  constructor(
    private readonly matchers: Matchers,
    private readonly query: GrepQuery,
    private readonly limit: number,
  ) {}

  /** No more matches are wanted (limit reached or binary). */
  get done(): boolean {
    return this.binary || this.matches >= this.limit;
  }

  /** Takes the next bytes of the file (the view may be reused by the caller afterwards). */
  feed(view: Buffer): void {
    if (!this.started) {
      this.started = true;
      if (view.subarray(0, 8192).includes(0)) {
        this.binary = true;
        return;
      }
    }
    const lastNewline = view.lastIndexOf(10);
    if (lastNewline === -1) {
      this.carry.push(Buffer.from(view));
      return;
    }
    const head = view.subarray(0, lastNewline + 1);
    const whole = this.carry.length > 0 ? Buffer.concat([...this.carry, head]) : head;
    this.carry = lastNewline + 1 < view.length ? [Buffer.from(view.subarray(lastNewline + 1))] : [];
    this.handleText(whole.toString("utf8"));
  }

  /** The matching and context lines; undefined for a binary file. */
  end(): GrepLine[] | undefined {
    if (this.binary) return undefined;
    if (!this.done && this.carry.length > 0) {
      const rest = Buffer.concat(this.carry).toString("utf8");
      if (rest.length > 0) this.handleText(`${rest}\n`);
    }
    return this.lines;
  }

  private handleText(text: string): void {
    // `text` holds whole lines, each ending in "\n". Most chunks have no match: skip them whole.
    const { context, maxLineLength } = this.query;
    if (this.afterLeft === 0 && !this.matchers.chunk.test(text)) {
      this.lineNumber += countNewlines(text);
      if (context > 0) {
        this.before = [
          ...this.before,
          ...lastLines(text, context, this.lineNumber, maxLineLength),
        ].slice(-context);
      }
      return;
    }
    let start = 0;
    while (start < text.length && this.matches < this.limit) {
      const end = text.indexOf("\n", start);
      this.handleLine(text.slice(start, end));
      start = end + 1;
    }
  }

  private handleLine(raw: string): void {
    this.lineNumber++;
    const { context, maxLineLength } = this.query;
    const text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const found = this.matchers.line.exec(text);
    if (found) {
      this.lines.push(...this.before);
      this.before = [];
      const end = found.index + found[0].length;
      this.lines.push({
        line: this.lineNumber,
        text: windowAround(text, found.index, end, maxLineLength),
        match: true,
      });
      this.matches++;
      this.afterLeft = context;
      return;
    }
    const line = {
      line: this.lineNumber,
      text: windowAround(text, 0, 0, maxLineLength),
      match: false,
    };
    if (this.afterLeft > 0) {
      this.lines.push(line);
      this.afterLeft--;
    } else if (context > 0) {
      this.before.push(line);
      if (this.before.length > context) this.before.shift();
    }
  }
}

/**
 * Searches one file, streaming it in chunks; returns undefined for a binary file. Stops after
 * `limit` matches.
 */
export async function searchFile(
  absolute: string,
  matchers: Matchers,
  query: GrepQuery,
  limit: number,
  signal?: AbortSignal,
  buffer: Buffer = Buffer.allocUnsafe(chunkSize),
): Promise<GrepLine[] | undefined> {
  const search = new LineSearch(matchers, query, limit);
  const handle = await open(
    absolute,
    constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW,
  );
  try {
    let position = 0;
    while (!search.done) {
      signal?.throwIfAborted();
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      search.feed(buffer.subarray(0, bytesRead));
    }
    return search.end();
  } finally {
    await handle.close();
  }
}

/**
 * Reads a file that fits in `buffer` synchronously and searches it; "large" when it does not fit
 * (the caller streams it instead). Small synchronous reads beat the thread pool's round trips
 * many times over on a tree of small files; the caller yields to the event loop between slices.
 */
function searchSmallFileSync(
  absolute: string,
  matchers: Matchers,
  query: GrepQuery,
  limit: number,
  buffer: Buffer,
): GrepLine[] | undefined | "large" {
  // O_NONBLOCK: a FIFO swapped in for a file must not block the event loop; O_NOFOLLOW: nor a
  // link swapped in lead out of the workspace.
  const descriptor = openSync(
    absolute,
    constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW,
  );
  let bytesRead: number;
  try {
    bytesRead = readSync(descriptor, buffer, 0, buffer.length, 0);
  } finally {
    closeSync(descriptor);
  }
  if (bytesRead === buffer.length) return "large";
  const search = new LineSearch(matchers, query, limit);
  if (bytesRead > 0) search.feed(buffer.subarray(0, bytesRead));
  return search.end();
}

export interface NodeGrepTarget {
  root: string;
  /** Real absolute path of the file or directory to search. */
  absolute: string;
}

/** Longest the search holds the event loop before letting other work run. */
const sliceMs = 15;

/** Runs the search in Node: walks the target as git sees it and reads the files in order. */
export async function grepWithNode(
  target: NodeGrepTarget,
  query: GrepQuery,
  signal?: AbortSignal,
): Promise<GrepResult> {
  const matchers: Matchers = {
    line: compilePattern(query.pattern, query.ignoreCase),
    chunk: compilePattern(query.pattern, query.ignoreCase, "m"),
  };
  const stats = await stat(target.absolute);
  const include = query.include
    ? picomatch(query.include, { dot: true, basename: !query.include.includes("/") })
    : undefined;

  /** Files in walk order, searched as the walk finds them so a common pattern stops early. */
  async function* candidates(): AsyncGenerator<{ absolute: string; relative: string }> {
    if (stats.isFile()) {
      yield { absolute: target.absolute, relative: toRelative(target.root, target.absolute) };
      return;
    }
    for await (const entry of walk(target.root, target.absolute, signal ? { signal } : {})) {
      if (entry.type !== "file") continue;
      if (include && !include(toRelative(target.absolute, entry.absolute))) continue;
      yield { absolute: entry.absolute, relative: entry.relative };
    }
  }

  const found: GrepFile[] = [];
  const buffer = Buffer.allocUnsafe(chunkSize);
  let matches = 0;
  let truncated = false;
  let sliceStart = performance.now();
  for await (const file of candidates()) {
    if (performance.now() - sliceStart > sliceMs) {
      await new Promise((resolve) => setImmediate(resolve));
      signal?.throwIfAborted();
      sliceStart = performance.now();
    }
    let lines: GrepLine[] | undefined;
    try {
      const small = searchSmallFileSync(
        file.absolute,
        matchers,
        query,
        query.maxMatches + 1,
        buffer,
      );
      lines =
        small === "large"
          ? await searchFile(file.absolute, matchers, query, query.maxMatches + 1, signal, buffer)
          : small;
    } catch {
      // Unreadable files are skipped, as ripgrep skips them.
      continue;
    }
    if (!lines || lines.length === 0) continue;
    const kept: GrepLine[] = [];
    for (const line of lines) {
      if (line.match) {
        if (matches >= query.maxMatches) {
          truncated = true;
          break;
        }
        matches++;
      }
      kept.push(line);
    }
    found.push({ path: file.relative, lines: kept });
    if (truncated) break;
  }
  return { files: found, matches, truncated, engine: "node" };
}

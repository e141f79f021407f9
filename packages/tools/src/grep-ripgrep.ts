// The grep engine on ripgrep: spawned (never through a shell) with --json, stopped once enough matched.
import { spawn } from "node:child_process";
import { access, constants } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { ToolError } from "@gadget/agent";
import type { GrepFile, GrepLine, GrepQuery, GrepResult } from "./grep-result.ts";
import { windowAround } from "./text.ts";

/** Finds an executable named `name` on a PATH string; undefined when there is none. */
export async function findOnPath(
  name: string,
  pathValue: string | undefined,
): Promise<string | undefined> {
  for (const directory of (pathValue ?? "").split(path.delimiter)) {
    if (!directory) continue;
    const candidate = path.join(directory, name);
    const found = await access(candidate, constants.X_OK).then(
      () => true,
      () => false,
    );
    if (found) return candidate;
  }
  return undefined;
}

interface RipgrepText {
  text?: string;
  bytes?: string;
}

interface RipgrepMessage {
  type: "begin" | "match" | "context" | "end" | "summary";
  data: {
    path?: RipgrepText;
    lines?: RipgrepText;
    line_number?: number;
    submatches?: { start: number; end: number }[];
  };
}

function decode(value: RipgrepText | undefined): string {
  if (!value) return "";
  if (value.text !== undefined) return value.text;
  return Buffer.from(value.bytes ?? "", "base64").toString("utf8");
}

function shownText(
  raw: string,
  submatch: { start: number; end: number } | undefined,
  max: number,
): string {
  const text = raw.replace(/\r?\n$/, "");
  if (text.length <= max) return text;
  if (!submatch) return windowAround(text, 0, 0, max);
  // ripgrep reports byte offsets; windows are in characters.
  const bytes = Buffer.from(text);
  const start = bytes.subarray(0, submatch.start).toString("utf8").length;
  const end = bytes.subarray(0, submatch.end).toString("utf8").length;
  return windowAround(text, start, end, max);
}

export interface RipgrepTarget {
  /** Real workspace root; ripgrep runs there so paths come out relative to it. */
  root: string;
  /** Path to search relative to the root ("." for all of it). */
  relative: string;
}

/** Runs ripgrep for `query` under `target`. */
export function grepWithRipgrep(
  ripgrepPath: string,
  target: RipgrepTarget,
  query: GrepQuery,
  env: Record<string, string | undefined>,
  signal?: AbortSignal,
): Promise<GrepResult> {
  const args = [
    "--json",
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-global",
    "--no-ignore-dot",
    "--no-messages",
  ];
  if (query.ignoreCase) args.push("--ignore-case");
  if (query.context > 0) args.push("--context", String(query.context));
  if (query.include) args.push("--glob", query.include);
  args.push("--glob", "!.git", "--glob", "!node_modules", "--regexp", query.pattern, "--");
  if (target.relative !== ".") args.push(target.relative);

  return new Promise((resolve, reject) => {
    const child = spawn(ripgrepPath, args, {
      cwd: target.root,
      env: { ...env, RIPGREP_CONFIG_PATH: undefined },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const files = new Map<string, GrepFile>();
    let matches = 0;
    let truncated = false;
    let stderr = "";
    let settled = false;
    const onAbort = () => child.kill("SIGKILL");
    signal?.addEventListener("abort", onAbort, { once: true });
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      if (error) reject(error);
      else resolve({ files: [...files.values()], matches, truncated, engine: "ripgrep" });
    };

    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    const lines = createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on("line", (json) => {
      if (truncated || settled) return;
      let message: RipgrepMessage;
      try {
        message = JSON.parse(json) as RipgrepMessage;
      } catch {
        return;
      }
      if (message.type !== "match" && message.type !== "context") return;
      const isMatch = message.type === "match";
      if (isMatch && matches >= query.maxMatches) {
        truncated = true;
        child.kill("SIGKILL");
        return;
      }
      const filePath = decode(message.data.path).replace(/^\.\//, "");
      let file = files.get(filePath);
      if (!file) {
        file = { path: filePath, lines: [] };
        files.set(filePath, file);
      }
      const line: GrepLine = {
        line: message.data.line_number ?? 0,
        text: shownText(
          decode(message.data.lines),
          message.data.submatches?.[0],
          query.maxLineLength,
        ),
        match: isMatch,
      };
      file.lines.push(line);
      if (isMatch) matches++;
    });
    child.on("error", (error) => finish(error));
    child.on("close", (code) => {
      if (signal?.aborted) return finish(signal.reason);
      if (truncated || code === 0 || code === 1) return finish();
      if (/regex|parse error|error parsing/i.test(stderr)) {
        return finish(
          new ToolError(
            "bad_pattern",
            `Invalid regular expression "${query.pattern}": ${stderr.trim().slice(0, 600)}\nEscape special characters such as ( [ { . * + ? with a backslash to match them literally.`,
          ),
        );
      }
      if (/glob/i.test(stderr)) {
        return finish(
          new ToolError(
            "bad_include",
            `Invalid include glob "${query.include}": ${stderr.trim().slice(0, 400)}`,
          ),
        );
      }
      if (matches > 0) return finish();
      finish(new Error(`ripgrep exited with code ${code}: ${stderr.trim().slice(0, 600)}`));
    });
  });
}

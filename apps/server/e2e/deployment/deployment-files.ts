// Reads the deployment files in docker/ the way Docker, Compose and HAProxy do, as far as the
// deployment tests need: compose.yml with `${…}` interpolation, .env files, Dockerfiles,
// .dockerignore, and haproxy.cfg's sections and `http-request deny` rules.
import { readFileSync } from "node:fs";
import path from "node:path";
import { UserError } from "@gadget/protocol";
import { findRepoRoot } from "@gadget/services";
import { parse } from "yaml";

export const repoRoot = findRepoRoot();
export const dockerDir = path.join(repoRoot, "docker");

export interface ComposeHealthcheck {
  test: string[] | string;
}

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string };
  command?: string[] | string;
  environment?: Record<string, string | number | null>;
  ports?: string[];
  volumes?: string[];
  healthcheck?: ComposeHealthcheck;
  depends_on?: Record<string, { condition: string }>;
  networks?: Record<string, { ipv4_address?: string } | null>;
}

export interface ComposeNetwork {
  ipam?: { config?: Array<{ subnet?: string; ip_range?: string }> };
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  networks?: Record<string, ComposeNetwork | null>;
  volumes?: Record<string, unknown>;
}

/** docker/compose.yml, parsed (YAML merge keys resolved), before interpolation. */
export function readComposeFile(file = path.join(dockerDir, "compose.yml")): ComposeFile {
  return parse(readFileSync(file, "utf8"), { merge: true }) as ComposeFile;
}

/** A `${VAR:?message}` whose variable is unset or empty: Compose refuses to start. */
export class MissingVariableError extends UserError {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super("missing_variable", `required variable ${variable} is missing a value: ${message}`);
  }
}

/**
 * Compose's interpolation: `$$`, `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`,
 * `${VAR:?error}`, `${VAR?error}`, `${VAR:+alternative}`, `${VAR+alternative}`, nested defaults.
 * Every variable read is added to `seen`.
 * @example interpolate("${PORT:-8080}", {}) // "8080"
 */
export function interpolate(
  text: string,
  variables: Record<string, string | undefined>,
  seen: Set<string> = new Set(),
): string {
  let result = "";
  let index = 0;
  while (index < text.length) {
    const character = text[index];
    if (character !== "$") {
      result += character;
      index++;
      continue;
    }
    const next = text[index + 1];
    if (next === "$") {
      result += "$";
      index += 2;
    } else if (next === "{") {
      let depth = 1;
      let end = index + 2;
      while (end < text.length && depth > 0) {
        if (text[end] === "$" && text[end + 1] === "{") {
          depth++;
          end++;
        } else if (text[end] === "}") depth--;
        if (depth > 0) end++;
      }
      if (depth > 0) throw new Error(`unclosed \${ in "${text}"`);
      result += expand(text.slice(index + 2, end), variables, seen);
      index = end + 1;
    } else {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(index + 1))?.[0];
      if (!name) {
        result += "$";
        index++;
        continue;
      }
      seen.add(name);
      result += variables[name] ?? "";
      index += 1 + name.length;
    }
  }
  return result;
}

function expand(
  inside: string,
  variables: Record<string, string | undefined>,
  seen: Set<string>,
): string {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([\s\S]*))?$/.exec(inside);
  if (!match?.[1]) throw new Error(`invalid substitution "\${${inside}}"`);
  const [, name, operator, word = ""] = match;
  seen.add(name);
  const value = variables[name];
  const unset = value === undefined;
  const missing = operator?.startsWith(":") ? unset || value === "" : unset;
  switch (operator) {
    case undefined:
      return value ?? "";
    case ":-":
    case "-":
      return missing ? interpolate(word, variables, seen) : (value ?? "");
    case ":?":
    case "?":
      if (missing) throw new MissingVariableError(name, interpolate(word, variables, seen));
      return value ?? "";
    default:
      return missing ? "" : interpolate(word, variables, seen);
  }
}

/** A service's `environment`, interpolated; a variable without a value is left out, as Compose does. */
export function serviceEnvironment(
  service: ComposeService,
  variables: Record<string, string | undefined>,
  seen?: Set<string>,
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(service.environment ?? {})) {
    if (value === null) continue;
    environment[name] = interpolate(String(value), variables, seen);
  }
  return environment;
}

/** Every string in a compose value (a network, a service's `networks`), interpolated. */
export function interpolateAll<T>(
  value: T,
  variables: Record<string, string | undefined>,
  seen?: Set<string>,
): T {
  if (typeof value === "string") return interpolate(value, variables, seen) as T;
  if (Array.isArray(value)) return value.map((item) => interpolateAll(item, variables, seen)) as T;
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateAll(item, variables, seen)]),
    ) as T;
  }
  return value;
}

/** A .env file (KEY=value lines, # comments, optional quotes) as a map. */
export function readEnvFile(file: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!match?.[1]) throw new Error(`${file}: cannot read "${raw}"`);
    const value = (match[2] ?? "").trim();
    values[match[1]] = /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value;
  }
  return values;
}

export interface DockerInstruction {
  /** Upper case: FROM, COPY, ENV, … */
  keyword: string;
  /** The rest of the instruction, continuation lines joined. */
  rest: string;
  /** Index of the build stage (FROM) it belongs to. */
  stage: number;
}

export interface Dockerfile {
  instructions: DockerInstruction[];
  /** Stage names (`FROM … AS name`), by index; unnamed stages are undefined. */
  stages: Array<string | undefined>;
}

/** Splits a Dockerfile into instructions (comments dropped, `\` continuations joined). */
export function readDockerfile(file: string): Dockerfile {
  const instructions: DockerInstruction[] = [];
  const stages: Array<string | undefined> = [];
  let pending = "";
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    const line = raw.trim();
    if (line.startsWith("#") || (!line && !pending)) continue;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const whole = `${pending}${line}`.trim();
    pending = "";
    if (!whole) continue;
    const match = /^(\S+)\s*([\s\S]*)$/.exec(whole);
    const keyword = (match?.[1] ?? "").toUpperCase();
    const rest = match?.[2] ?? "";
    if (keyword === "FROM") stages.push(/\sAS\s+(\S+)$/i.exec(rest)?.[1]);
    instructions.push({ keyword, rest, stage: stages.length - 1 });
  }
  return { instructions, stages };
}

/** Words of an instruction, honouring double and single quotes. */
export function words(text: string): string[] {
  return [...text.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g)].map(
    (match) => match[1] ?? match[2] ?? match[3] ?? "",
  );
}

export interface CopyInstruction {
  from: string | undefined;
  sources: string[];
  destination: string;
  stage: number;
}

/** Every COPY/ADD with its `--from` stage (undefined: the build context). */
export function copyInstructions(dockerfile: Dockerfile): CopyInstruction[] {
  return dockerfile.instructions
    .filter(({ keyword }) => keyword === "COPY" || keyword === "ADD")
    .map(({ rest, stage }) => {
      const parts = rest.trim().startsWith("[") ? (JSON.parse(rest) as string[]) : words(rest);
      const flags = parts.filter((part) => part.startsWith("--"));
      const paths = parts.filter((part) => !part.startsWith("--"));
      const from = flags.find((flag) => flag.startsWith("--from="))?.slice("--from=".length);
      return { from, sources: paths.slice(0, -1), destination: paths.at(-1) ?? "", stage };
    });
}

/** The environment a stage's ENV instructions set (the final stage unless told otherwise). */
export function stageEnvironment(dockerfile: Dockerfile, stage = dockerfile.stages.length - 1) {
  const environment: Record<string, string> = {};
  for (const instruction of dockerfile.instructions) {
    if (instruction.keyword !== "ENV" || instruction.stage !== stage) continue;
    const parts = words(instruction.rest);
    if (parts.length === 2 && !parts[0]?.includes("=")) {
      environment[parts[0] ?? ""] = parts[1] ?? "";
      continue;
    }
    for (const part of parts) {
      const equals = part.indexOf("=");
      if (equals < 1) throw new Error(`cannot read ENV ${instruction.rest}`);
      environment[part.slice(0, equals)] = part.slice(equals + 1).replace(/^"(.*)"$/, "$1");
    }
  }
  return environment;
}

/** An exec-form (`["a", "b"]`) or shell-form instruction as argv, as Docker runs it. */
export function commandOf(rest: string): string[] {
  const text = rest.trim();
  return text.startsWith("[") ? (JSON.parse(text) as string[]) : ["/bin/sh", "-c", text];
}

/** The HEALTHCHECK's command of a Dockerfile's final stage, as argv. */
export function healthcheckCommand(dockerfile: Dockerfile): string[] {
  const last = dockerfile.stages.length - 1;
  const instruction = dockerfile.instructions.find(
    ({ keyword, stage }) => keyword === "HEALTHCHECK" && stage === last,
  );
  if (!instruction) throw new Error("no HEALTHCHECK in the final stage");
  const command = /(?:^|\s)CMD\s+([\s\S]*)$/.exec(instruction.rest)?.[1];
  if (!command) throw new Error(`HEALTHCHECK without CMD: ${instruction.rest}`);
  return commandOf(command);
}

/** A compose healthcheck `test` as argv (CMD, CMD-SHELL or a string), after interpolation. */
export function composeHealthcheckCommand(
  healthcheck: ComposeHealthcheck,
  variables: Record<string, string | undefined> = {},
): string[] {
  const test =
    typeof healthcheck.test === "string" ? ["CMD-SHELL", healthcheck.test] : healthcheck.test;
  const [kind, ...rest] = test.map((part) => interpolate(part, variables));
  if (kind === "CMD") return rest;
  if (kind === "CMD-SHELL") return ["/bin/sh", "-c", rest.join(" ")];
  throw new Error(`unknown healthcheck form ${kind}`);
}

/**
 * Whether .dockerignore excludes `relative` (a path inside the build context, `/`-separated):
 * patterns are anchored at the context root, `**` spans directories, a later `!pattern` re-includes,
 * and excluding a directory excludes everything below it.
 */
export function isDockerIgnored(dockerignore: string, relative: string): boolean {
  const rules = dockerignore
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"))
    .map((line) => {
      const negated = line.startsWith("!");
      const pattern = path.posix.normalize((negated ? line.slice(1) : line).replace(/^\/+/, ""));
      return { negated, expression: patternExpression(pattern) };
    });
  const segments = path.posix.normalize(relative).split("/");
  let ignored = false;
  for (const rule of rules) {
    for (let length = 1; length <= segments.length; length++) {
      if (rule.expression.test(segments.slice(0, length).join("/"))) {
        ignored = !rule.negated;
        break;
      }
    }
  }
  return ignored;
}

function patternExpression(pattern: string): RegExp {
  let source = "";
  for (let index = 0; index < pattern.length; index++) {
    const character = pattern[index] ?? "";
    if (pattern.startsWith("**/", index)) {
      source += "(?:.*/)?";
      index += 2;
    } else if (pattern.startsWith("**", index)) {
      source += ".*";
      index += 1;
    } else if (character === "*") source += "[^/]*";
    else if (character === "?") source += "[^/]";
    else source += character.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

export interface HaproxySection {
  /** global, defaults, frontend, backend, resolvers, … */
  kind: string;
  name: string;
  /** Its statements, trimmed, comments and blank lines dropped. */
  lines: string[];
}

/** haproxy.cfg as sections of statements. */
export function readHaproxyConfig(file = path.join(dockerDir, "haproxy.cfg")): HaproxySection[] {
  const sections: HaproxySection[] = [];
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    const line = raw.replace(/(^|\s)#.*$/, "").trim();
    if (!line) continue;
    if (/^\S/.test(raw)) {
      const [kind = "", name = ""] = line.split(/\s+/);
      sections.push({ kind, name, lines: [] });
    } else sections.at(-1)?.lines.push(line);
  }
  return sections;
}

/**
 * Whether one of a frontend's `http-request deny … if { <fetch>,<converters> [-m <method>] <pattern> }`
 * rules refuses a request for `target` (origin or absolute form). Knows the `path` fetch, the
 * `url_dec` and `lower` converters and the str/beg/end/sub/reg methods, and throws on anything
 * else, so a rule it cannot read never passes for one that refuses.
 * @example deniesPath(frontend, "/%6detrics") // true when the rule decodes before matching
 */
export function deniesPath(frontend: HaproxySection, target: string): boolean {
  const path = requestPath(target);
  return frontend.lines
    .filter((line) => line.startsWith("http-request deny"))
    .some((rule) => {
      const condition = /\sif\s+\{\s*(\S+)\s+(?:-m\s+(\w+)\s+)?(\S+)\s*\}$/.exec(rule);
      if (!condition) throw new Error(`cannot read the rule "${rule}"`);
      // Without -m, `path` matches the whole string.
      const [, expression = "", method = "str", pattern = ""] = condition;
      const [fetch, ...converters] = expression.split(",");
      if (fetch !== "path") throw new Error(`unknown fetch ${fetch} in "${rule}"`);
      let value: string | null = path;
      for (const converter of converters) {
        if (value === null) break;
        if (converter === "url_dec") value = percentDecode(value);
        else if (converter === "lower") value = value.toLowerCase();
        else throw new Error(`unknown converter ${converter} in "${rule}"`);
      }
      // A converter that fails (url_dec on "%zz") makes the condition false, as in HAProxy.
      if (value === null) return false;
      if (method === "str") return value === pattern;
      if (method === "beg") return value.startsWith(pattern);
      if (method === "end") return value.endsWith(pattern);
      if (method === "sub") return value.includes(pattern);
      if (method === "reg") return new RegExp(pattern).test(value);
      throw new Error(`unknown match method ${method} in "${rule}"`);
    });
}

/** HAProxy's `path`: the request target without scheme, authority and query string. */
function requestPath(target: string): string {
  const origin = target.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "");
  return origin.split("?")[0] ?? "";
}

/** HAProxy's `url_dec`: every %XX decoded to its byte; null when a `%` is not followed by two hex digits. */
function percentDecode(text: string): string | null {
  if (/%(?![0-9a-f]{2})/i.test(text)) return null;
  return text.replace(/%([0-9a-f]{2})/gi, (_match, hex: string) =>
    String.fromCharCode(Number.parseInt(hex, 16)),
  );
}

// A project's MCP servers as the settings form edits them: a stdio server's command (one line,
// split into arguments like a shell would, without running one) and env (KEY=VALUE lines, values
// write-only: stored ones show only their names), or a remote server's URL and bearer token
// (write-only too). Saved as the whole `mcpServers` list of `PATCH /api/projects/:id`.

import type { McpServerBody, NetworkMode, ProjectMcpServer } from "@gadget/protocol";
import { EnvEditor, envBodyOf } from "../components/env-editor.tsx";
import { Field } from "../forms/field.tsx";
import { commandExample, commandHelp, commandWarnings } from "./mcp-command-advice.ts";

/** One server as the form holds it. */
export interface McpServerDraft {
  /** Stable key for React while names are typed. */
  key: string;
  name: string;
  kind: "command" | "url";
  command: string;
  url: string;
  /** New or replaced variables, KEY=VALUE per line. */
  envText: string;
  /** Stored variables kept (their values never come back). */
  keptEnv: string[];
  bearerToken: string;
  /** A stored token is kept unless replaced or removed. */
  keepBearerToken: boolean;
  /** Tool names offered, comma-separated; empty: all. */
  tools: string;
}

let nextKey = 0;

/** Splits one command line into arguments: spaces separate, quotes group, backslash escapes. */
export function splitCommandLine(line: string): string[] {
  const args: string[] = [];
  let current = "";
  let started = false;
  let quote: '"' | "'" | null = null;
  for (let index = 0; index < line.length; index++) {
    const char = line[index] as string;
    if (quote) {
      if (char === quote) quote = null;
      else if (char === "\\" && quote === '"' && index + 1 < line.length) current += line[++index];
      else current += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      started = true;
    } else if (char === "\\" && index + 1 < line.length) {
      current += line[++index];
      started = true;
    } else if (/\s/.test(char)) {
      if (started) args.push(current);
      current = "";
      started = false;
    } else {
      current += char;
      started = true;
    }
  }
  if (started) args.push(current);
  return args;
}

/** The variables a draft sets: kept ones and those typed as KEY=VALUE lines. */
function envNamesOf(draft: McpServerDraft): string[] {
  const typed = draft.envText
    .split("\n")
    .map((line) => line.split("=")[0]?.trim() ?? "")
    .filter(Boolean);
  return [...draft.keptEnv, ...typed];
}

/** Arguments back into one line, quoting those that need it. */
export function joinCommandLine(args: readonly string[]): string {
  return args
    .map((arg) => (arg === "" || /[\s"'\\]/.test(arg) ? `'${arg.replace(/'/g, `'"'"'`)}'` : arg))
    .join(" ");
}

export function emptyDraft(): McpServerDraft {
  return {
    key: `new-${nextKey++}`,
    name: "",
    kind: "command",
    command: "",
    url: "",
    envText: "",
    keptEnv: [],
    bearerToken: "",
    keepBearerToken: false,
    tools: "",
  };
}

export function draftOf(server: ProjectMcpServer): McpServerDraft {
  return {
    ...emptyDraft(),
    key: `stored-${server.name}`,
    name: server.name,
    kind: server.url ? "url" : "command",
    command: joinCommandLine(server.command ?? []),
    url: server.url ?? "",
    keptEnv: server.envKeys,
    keepBearerToken: server.hasBearerToken,
    tools: (server.tools ?? []).join(", "),
  };
}

/** The server as the PATCH body sends it (the server validates it and answers 400 naming a field). */
export function bodyOf(draft: McpServerDraft): McpServerBody {
  const tools = draft.tools
    .split(",")
    .map((tool) => tool.trim())
    .filter(Boolean);
  const base = { name: draft.name.trim(), ...(tools.length ? { tools } : {}) };
  if (draft.kind === "url") {
    const token = draft.bearerToken.trim();
    return {
      ...base,
      url: draft.url.trim(),
      // Left out: the stored token stays; null: removed.
      ...(token ? { bearerToken: token } : draft.keepBearerToken ? {} : { bearerToken: null }),
    };
  }
  return {
    ...base,
    command: splitCommandLine(draft.command),
    env: envBodyOf(draft.keptEnv, draft.envText),
  };
}

/** Edits the list of MCP servers; `onChange` gets the whole new list. */
export function McpServersEditor({
  drafts,
  network,
  onChange,
}: {
  drafts: McpServerDraft[];
  /** The project's network setting, which decides what a command can fetch when it starts. */
  network: NetworkMode;
  onChange: (drafts: McpServerDraft[]) => void;
}) {
  const update = (key: string, change: Partial<McpServerDraft>) =>
    onChange(drafts.map((draft) => (draft.key === key ? { ...draft, ...change } : draft)));
  return (
    <fieldset className="field mcp-servers" aria-label="MCP servers">
      <legend>
        MCP servers: their tools join the agent's as mcp__server__tool (read-only ones run without
        approval). A command runs inside the sandbox, in the session's worktree.
      </legend>
      {drafts.length === 0 ? <p className="muted small">No MCP servers.</p> : null}
      {drafts.map((draft, index) => {
        const label = draft.name || `server ${index + 1}`;
        return (
          <fieldset key={draft.key} className="mcp-server" aria-label={`MCP server ${label}`}>
            <div className="form-actions">
              <Field label="Server name">
                <input
                  value={draft.name}
                  placeholder="e.g. github"
                  onChange={(event) => update(draft.key, { name: event.target.value })}
                />
              </Field>
              <Field label="Server kind">
                <select
                  value={draft.kind}
                  onChange={(event) =>
                    update(draft.key, { kind: event.target.value as McpServerDraft["kind"] })
                  }
                >
                  <option value="command">Command (stdio)</option>
                  <option value="url">Remote URL (Streamable HTTP)</option>
                </select>
              </Field>
              <button
                type="button"
                className="button small"
                onClick={() => onChange(drafts.filter((other) => other.key !== draft.key))}
              >
                Remove {label}
              </button>
            </div>
            {draft.kind === "command" ? (
              <>
                <Field label="Command">
                  <input
                    value={draft.command}
                    placeholder={commandExample(network)}
                    aria-describedby={`${draft.key}-help`}
                    onChange={(event) => update(draft.key, { command: event.target.value })}
                  />
                </Field>
                <small id={`${draft.key}-help`} className="muted small">
                  {commandHelp(network)}
                </small>
                {commandWarnings(splitCommandLine(draft.command), envNamesOf(draft), network).map(
                  (warning) => (
                    <small key={warning} className="field-problem" role="note">
                      {warning}
                    </small>
                  ),
                )}
                <EnvEditor
                  kept={draft.keptEnv}
                  text={draft.envText}
                  placeholder="GITHUB_TOKEN=… (one KEY=VALUE per line; stored encrypted, never shown again)"
                  label="Environment"
                  showLabel
                  onKept={(keptEnv) => update(draft.key, { keptEnv })}
                  onText={(envText) => update(draft.key, { envText })}
                />
              </>
            ) : (
              <>
                <Field label="URL">
                  <input
                    value={draft.url}
                    placeholder="https://mcp.example.com/mcp"
                    onChange={(event) => update(draft.key, { url: event.target.value })}
                  />
                </Field>
                {draft.keepBearerToken ? (
                  <div className="form-actions">
                    <span className="muted small">Bearer token set</span>
                    <button
                      type="button"
                      className="button small"
                      onClick={() => update(draft.key, { keepBearerToken: false })}
                    >
                      Remove token
                    </button>
                  </div>
                ) : null}
                <Field label="Bearer token">
                  <input
                    type="password"
                    autoComplete="off"
                    value={draft.bearerToken}
                    placeholder={
                      draft.keepBearerToken ? "a new one replaces the one set" : "optional"
                    }
                    onChange={(event) => update(draft.key, { bearerToken: event.target.value })}
                  />
                </Field>
              </>
            )}
            <Field label="Tools offered">
              <input
                value={draft.tools}
                placeholder="only these, comma-separated (empty: all)"
                onChange={(event) => update(draft.key, { tools: event.target.value })}
              />
            </Field>
          </fieldset>
        );
      })}
      <div className="form-actions">
        <button
          type="button"
          className="button small"
          onClick={() => onChange([...drafts, emptyDraft()])}
        >
          Add MCP server
        </button>
      </div>
    </fieldset>
  );
}

// A project's settings that shape its turns: what the drone's sandbox lets commands reach, the
// commands that verify the agent's work, how the drone names each session's branch, and whether it
// pushes that branch (delivery) under which commit author, and the forge its pull requests are
// opened on (the token is write-only: set, replaced or removed, never shown), and the MCP servers
// whose tools the agent gets.
import {
  DEFAULT_FORGE_API_URLS,
  type DeliveryMode,
  type ForgeKind,
  type NetworkMode,
  type Project,
  type UpdateProjectBody,
} from "@gadget/protocol";
import { type FormEvent, useState } from "react";
import { ErrorNote } from "../components/error-note.tsx";
import { bodyOf, draftOf, type McpServerDraft, McpServersEditor } from "./mcp-servers-editor.tsx";

export const networkWords: Record<NetworkMode, string> = {
  none: "No network (default)",
  allowlist: "Only the hosts listed below",
  open: "Open: any host, including this machine's own services",
};

export const deliveryWords: Record<DeliveryMode, string> = {
  workspace: "Keep the branch on the drone (default)",
  branch: "Push the session's branch to origin after every turn",
  "pull-request": "Push the branch and open the session's pull request on the forge",
};

export const forgeWords: Record<ForgeKind | "none", string> = {
  none: "None",
  github: "GitHub",
  gitlab: "GitLab (merge requests)",
};

/** The `forge` field of the PATCH body, or undefined when the forge did not change. */
function forgeChange(
  before: Project["forge"],
  kind: ForgeKind | "none",
  apiUrl: string,
  token: string,
): UpdateProjectBody["forge"] | undefined {
  if (kind === "none") return before ? null : undefined;
  const url = apiUrl.trim();
  if (!token.trim() && before?.kind === kind && before.apiUrl === url) return undefined;
  // Without a new token the server keeps the one it holds.
  return { kind, apiUrl: url, ...(token.trim() ? { token: token.trim() } : {}) };
}

function sameAuthor(a: Project["commitAuthor"], b: Project["commitAuthor"]): boolean {
  return a?.name === b?.name && a?.email === b?.email;
}

function lines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
}

/** Network policy, verification commands and branch prefix of one project, saved with `PATCH /api/projects/:id`. */
export function ProjectSettings({
  project,
  onSave,
}: {
  project: Project;
  onSave: (body: UpdateProjectBody) => Promise<void>;
}) {
  const [network, setNetwork] = useState<NetworkMode>(project.network);
  const [hosts, setHosts] = useState(project.allowedHosts.join("\n"));
  const [verify, setVerify] = useState(project.verifyCommands.join("\n"));
  const [branchPrefix, setBranchPrefix] = useState(project.branchPrefix);
  const [requires, setRequires] = useState(project.requires.join(" "));
  const [delivery, setDelivery] = useState<DeliveryMode>(project.delivery);
  const [authorName, setAuthorName] = useState(project.commitAuthor?.name ?? "");
  const [authorEmail, setAuthorEmail] = useState(project.commitAuthor?.email ?? "");
  const [forgeKind, setForgeKind] = useState<ForgeKind | "none">(project.forge?.kind ?? "none");
  const [forgeUrl, setForgeUrl] = useState(project.forge?.apiUrl ?? "");
  const [forgeToken, setForgeToken] = useState("");
  // A stored token is never shown: the field appears only to replace it.
  const [replacingToken, setReplacingToken] = useState(!project.forge?.hasToken);
  const [mcpDrafts, setMcpDrafts] = useState<McpServerDraft[]>(() =>
    project.mcpServers.map(draftOf),
  );
  const [mcpChanged, setMcpChanged] = useState(false);
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaving(true);
    setSaved(false);
    setError(null);
    // Both empty: the drone machine's own git identity.
    const author =
      authorName.trim() || authorEmail.trim()
        ? { name: authorName.trim(), email: authorEmail.trim() }
        : null;
    const forge = forgeChange(project.forge, forgeKind, forgeUrl, forgeToken);
    try {
      await onSave({
        network,
        allowedHosts: lines(hosts),
        verifyCommands: lines(verify),
        // Sent only when changed: a project stored before the field existed keeps the default.
        ...(branchPrefix === project.branchPrefix ? {} : { branchPrefix: branchPrefix.trim() }),
        ...(delivery === project.delivery ? {} : { delivery }),
        ...(sameAuthor(author, project.commitAuthor) ? {} : { commitAuthor: author }),
        ...(forge === undefined ? {} : { forge }),
        ...(requires.trim() === project.requires.join(" ")
          ? {}
          : { requires: requires.split(/\s+/).filter(Boolean) }),
        ...(mcpChanged ? { mcpServers: mcpDrafts.map(bodyOf) } : {}),
      });
      setSaved(true);
      if (mcpChanged) {
        // Values just saved are never shown again: they become names of kept ones.
        setMcpDrafts((drafts) =>
          drafts.map((draft) => {
            const body = bodyOf(draft);
            return {
              ...draft,
              envText: "",
              keptEnv: Object.keys(body.env ?? {}),
              bearerToken: "",
              keepBearerToken: draft.kind === "url" && body.bearerToken !== null,
            };
          }),
        );
        setMcpChanged(false);
      }
      setForgeToken("");
      // A token just saved is never shown again.
      if (forge?.token) setReplacingToken(false);
    } catch (caught) {
      setError(caught);
    } finally {
      setSaving(false);
    }
  };
  return (
    <form className="form-grid" onSubmit={submit} aria-label="Project settings">
      <label className="field">
        <span>Network for the agent's commands</span>
        <select
          value={network}
          onChange={(event) => {
            setNetwork(event.target.value as NetworkMode);
            setSaved(false);
          }}
        >
          {(Object.keys(networkWords) as NetworkMode[]).map((mode) => (
            <option key={mode} value={mode}>
              {networkWords[mode]}
            </option>
          ))}
        </select>
      </label>
      {network === "allowlist" ? (
        <label className="field">
          <span>
            Allowed hosts, one per line (e.g. registry.npmjs.org, *.github.com, 127.0.0.1:4873). An
            empty list allows none.
          </span>
          <textarea
            rows={4}
            value={hosts}
            onChange={(event) => {
              setHosts(event.target.value);
              setSaved(false);
            }}
            aria-label="Allowed hosts"
          />
        </label>
      ) : null}
      <label className="field">
        <span>Verification commands, one per line (run after each turn that changed files)</span>
        <textarea
          rows={2}
          value={verify}
          onChange={(event) => {
            setVerify(event.target.value);
            setSaved(false);
          }}
          aria-label="Verification commands"
        />
      </label>
      <label className="field">
        <span>
          Drone labels the project's turns require, separated by spaces (e.g. gpu os=linux): a turn
          waits for an online drone that has them all. Empty: any drone.
        </span>
        <input
          value={requires}
          onChange={(event) => {
            setRequires(event.target.value);
            setSaved(false);
          }}
          aria-label="Required drone labels"
        />
      </label>
      <label className="field">
        <span>
          Branch prefix: each session works on its own branch, named this prefix, the session's name
          and the start of its id (e.g. gadget/fix-login-665f1c). New sessions use it.
        </span>
        <input
          value={branchPrefix}
          onChange={(event) => {
            setBranchPrefix(event.target.value);
            setSaved(false);
          }}
          aria-label="Branch prefix"
        />
      </label>
      <label className="field">
        <span>
          Delivery: what happens to a session's branch. Pushing uses the drone machine's own git
          credentials.
        </span>
        <select
          value={delivery}
          onChange={(event) => {
            setDelivery(event.target.value as DeliveryMode);
            setSaved(false);
          }}
          aria-label="Delivery"
        >
          {(Object.keys(deliveryWords) as DeliveryMode[]).map((mode) => (
            <option key={mode} value={mode}>
              {deliveryWords[mode]}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>Commit author name (empty: the drone machine's git identity)</span>
        <input
          value={authorName}
          onChange={(event) => {
            setAuthorName(event.target.value);
            setSaved(false);
          }}
          aria-label="Commit author name"
        />
      </label>
      <label className="field">
        <span>Commit author email</span>
        <input
          value={authorEmail}
          onChange={(event) => {
            setAuthorEmail(event.target.value);
            setSaved(false);
          }}
          aria-label="Commit author email"
        />
      </label>
      <label className="field">
        <span>
          Forge for pull requests: the drone opens each session's pull request through its API
        </span>
        <select
          value={forgeKind}
          onChange={(event) => {
            const kind = event.target.value as ForgeKind | "none";
            setForgeKind(kind);
            // A new kind starts from its public service's API; a self-hosted one is typed over it.
            if (kind !== "none" && kind !== forgeKind) setForgeUrl(DEFAULT_FORGE_API_URLS[kind]);
            if (kind !== "none" && !project.forge?.hasToken) setReplacingToken(true);
            setSaved(false);
          }}
          aria-label="Forge"
        >
          {(Object.keys(forgeWords) as Array<ForgeKind | "none">).map((kind) => (
            <option key={kind} value={kind}>
              {forgeWords[kind]}
            </option>
          ))}
        </select>
      </label>
      {forgeKind === "none" ? (
        project.forge ? (
          <p className="muted small">The forge and its token are removed when you save.</p>
        ) : null
      ) : (
        <>
          <label className="field">
            <span>Forge API URL (e.g. https://api.github.com, https://gitlab.com/api/v4)</span>
            <input
              value={forgeUrl}
              onChange={(event) => {
                setForgeUrl(event.target.value);
                setSaved(false);
              }}
              aria-label="Forge API URL"
            />
          </label>
          {replacingToken ? (
            <label className="field">
              <span>Forge token (may open pull requests; stored encrypted, never shown again)</span>
              <input
                type="password"
                autoComplete="off"
                value={forgeToken}
                onChange={(event) => {
                  setForgeToken(event.target.value);
                  setSaved(false);
                }}
                aria-label="Forge token"
              />
            </label>
          ) : (
            <div className="field">
              <span className="muted small" role="status" aria-label="Forge token">
                Token set
              </span>
              <div className="form-actions">
                <button
                  type="button"
                  className="button small"
                  onClick={() => setReplacingToken(true)}
                >
                  Replace token
                </button>
                <button
                  type="button"
                  className="button small"
                  onClick={() => {
                    setForgeKind("none");
                    setSaved(false);
                  }}
                >
                  Remove forge
                </button>
              </div>
            </div>
          )}
        </>
      )}
      <McpServersEditor
        drafts={mcpDrafts}
        onChange={(drafts) => {
          setMcpDrafts(drafts);
          setMcpChanged(true);
          setSaved(false);
        }}
      />
      <ErrorNote error={error} title="Could not save the settings" />
      <div className="form-actions">
        {saved ? <span className="muted small">Saved; the next turn uses them.</span> : null}
        <button type="submit" className="button primary small" disabled={saving}>
          {saving ? "Saving…" : "Save settings"}
        </button>
      </div>
    </form>
  );
}

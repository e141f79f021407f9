// "Is this git URL right?" answered from the drone's machine, where turns will clone it: one
// `git ls-remote` with the drone's hardened git, a timeout, and credentials removed from what it says.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { GitRemoteCheckResult, GitRemoteProblem } from "@gadget/protocol";
import { splitCredentials } from "./credentials.ts";
import { droneGit } from "./git.ts";

/** How long a remote has to answer before it counts as unreachable. */
export const remoteCheckTimeoutMs = 10_000;

/** `https://user:token@host/…` → `https://***@host/…`, wherever it appears in git's text. */
export function withoutCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, "$1***@");
}

const notFound = [
  /repository .* not found/i,
  /not found/i,
  /does not appear to be a git repository/i,
  /does not exist/i,
  /\b404\b/,
];
const authentication = [
  /authentication failed/i,
  /could not read (username|password)/i,
  /terminal prompts disabled/i,
  /permission denied/i,
  /\b40[13]\b/,
  /host key verification failed/i,
];

/** What kind of failure git's words describe; anything else is an unreachable remote. */
export function remoteProblem(text: string): GitRemoteProblem {
  if (authentication.some((pattern) => pattern.test(text))) return "authentication_failed";
  if (notFound.some((pattern) => pattern.test(text))) return "not_found";
  return "unreachable";
}

const problemWords: Record<GitRemoteProblem, string> = {
  not_found: "No repository at this URL",
  authentication_failed:
    "The remote refused this drone's credentials (or the repository is private or does not exist)",
  unreachable: "The remote could not be reached",
};

/**
 * Asks the remote for its refs. `ok` with its default branch, or the problem in words.
 * @example const result = await checkRemote("https://github.com/org/repo.git");
 */
export async function checkRemote(
  gitUrl: string,
  options: { timeoutMs?: number } = {},
): Promise<GitRemoteCheckResult> {
  const timeoutMs = options.timeoutMs ?? remoteCheckTimeoutMs;
  const signal = AbortSignal.timeout(timeoutMs);
  // Credentials go to git through a store of this check's own, never on its command line.
  const { url, storeLine } = splitCredentials(gitUrl);
  const scratch = storeLine ? await mkdtemp(path.join(tmpdir(), "gadget-check-")) : null;
  const credentialStore = scratch ? path.join(scratch, "credentials") : null;
  if (credentialStore) await writeFile(credentialStore, `${storeLine}\n`, { mode: 0o600 });
  try {
    const client = await droneGit(tmpdir(), { signal, credentialStore }, false);
    const output = await client.raw(["ls-remote", ...client.transport, "--symref", url, "HEAD"]);
    const head = /^ref: refs\/heads\/(\S+)\s+HEAD$/m.exec(output);
    return { ok: true, defaultBranch: head?.[1] ?? null };
  } catch (error) {
    if (signal.aborted) {
      return {
        ok: false,
        problem: "unreachable",
        message: `The remote did not answer within ${Math.round(timeoutMs / 1000)} s`,
      };
    }
    const said = withoutCredentials(error instanceof Error ? error.message : String(error));
    const problem = remoteProblem(said);
    // git's own last lines say the most ("fatal: …"); the URL in them has its credentials removed.
    const lines = said
      .split("\n")
      .map((line) => line.trim())
      .filter(Boolean)
      .slice(-3)
      .join(" ");
    return { ok: false, problem, message: `${problemWords[problem]}: ${lines}`.slice(0, 1000) };
  } finally {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}

// A project's git credentials (a `https://user:token@host/…` git URL) never go on a command line or
// into the clone's config, where `ps` and the sandbox's read-only `.git/config` would show them:
// the drone keeps them in a file of its own (git's `credential-store` format, mode 0600, under the
// workspace root that no command sees) and hands git that store for its fetches and pushes.
import { existsSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";

/** The URL without its user name and password, and the store line holding them (or null). */
export interface SplitGitUrl {
  url: string;
  /** `https://user:password@host`, as git's credential store reads it; null without credentials. */
  storeLine: string | null;
}

/**
 * Takes the credentials out of an http(s) git URL.
 * @example splitCredentials("https://ada:t0ken@git.example/x.git") // { url: "https://git.example/x.git", storeLine: "https://ada:t0ken@git.example" }
 */
export function splitCredentials(gitUrl: string): SplitGitUrl {
  let parsed: URL;
  try {
    parsed = new URL(gitUrl);
  } catch {
    return { url: gitUrl, storeLine: null };
  }
  if (!/^https?:$/.test(parsed.protocol) || (!parsed.username && !parsed.password)) {
    return { url: gitUrl, storeLine: null };
  }
  // Kept percent-encoded, as the store file wants them.
  const storeLine = `${parsed.protocol}//${parsed.username}:${parsed.password}@${parsed.host}`;
  parsed.username = "";
  parsed.password = "";
  return { url: parsed.toString(), storeLine };
}

/** Where a project's credentials are kept: `<workspaceRoot>/.credentials/<slug>`. */
export function credentialFile(workspaceRoot: string, slug: string): string {
  return path.join(workspaceRoot, ".credentials", slug);
}

/**
 * Writes (or, for a URL without credentials, removes) the project's credential store; returns the
 * store to hand git, or null when the URL carries none.
 * @example const store = await rememberCredentials(workspaceRoot, slug, order.project.gitUrl);
 */
export async function rememberCredentials(
  workspaceRoot: string,
  slug: string,
  gitUrl: string,
): Promise<string | null> {
  const file = credentialFile(workspaceRoot, slug);
  const { storeLine } = splitCredentials(gitUrl);
  if (!storeLine) {
    await rm(file, { force: true });
    return null;
  }
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${storeLine}\n`, { mode: 0o600 });
  await rename(temporary, file);
  return file;
}

/** The project's credential store when it has one (a push, revert or deliver after a turn). */
export function storedCredentials(workspaceRoot: string, slug: string): string | null {
  const file = credentialFile(workspaceRoot, slug);
  return existsSync(file) ? file : null;
}

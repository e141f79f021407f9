// The drone's own git (outside the sandbox) for its checkouts: never prompts for credentials, and
// runs nothing a repository configured — hooks, fsmonitor, filters, drivers, helpers.
import { type HardenedGit, hardenedGit } from "@gadget/sandbox";
import { gitOrThrow } from "@gadget/tools";
import { type SimpleGitProgressEvent, simpleGit } from "simple-git";
import { gitEnvironment } from "../env.ts";

/**
 * simple-git refuses these settings by default because a caller could use them to run programs;
 * the drone sets them only to switch the repository's own programs off (see hardenedGit).
 */
const overridesWeSet = {
  allowUnsafeHooksPath: true,
  allowUnsafeFsMonitor: true,
  allowUnsafeFilter: true,
  allowUnsafeDiffExternal: true,
  allowUnsafeDiffTextConv: true,
  allowUnsafeMergeDriver: true,
  allowUnsafePack: true,
  allowUnsafeGitProxy: true,
  allowUnsafeAskPass: true,
  allowUnsafeEditor: true,
  allowUnsafePager: true,
  allowUnsafeCredentialHelper: true,
  allowUnsafeGpgProgram: true,
  allowUnsafeProtocolOverride: true,
  allowUnsafeSshCommand: true,
};

export interface DroneGitOptions {
  signal?: AbortSignal | undefined;
  /**
   * The project's own credential store (see credentials.ts): when given, it is the only place git
   * takes credentials from for this call, the user's helpers left out.
   */
  credentialStore?: string | null | undefined;
  /**
   * One read of the repository's config (`readHardening`) shared by the calls of one step — a
   * turn's add, commit and push — instead of one read per call. Between them only the drone's own
   * git runs, which changes no config, and the sandbox shows `.git` read-only to the model.
   */
  hardened?: Promise<HardenedGit> | undefined;
  /** Clone/fetch progress, 0–100 per stage. */
  onProgress?: ((progress: { stage: string; percent: number }) => void) | undefined;
}

/**
 * A simple-git client in `directory` with the hardened settings; `inRepository: false` for a call
 * outside any repository (a clone). `transport` goes on every fetch and clone; `configuredKeys`
 * are the config keys set in any scope.
 * @example const repository = await droneGit(clone, {}, true); await repository.raw(["worktree", "prune"]);
 */
export async function droneGit(directory: string, options: DroneGitOptions, inRepository: boolean) {
  const environment = gitEnvironment();
  const hardened =
    inRepository && options.hardened
      ? await options.hardened
      : await hardenedGit(inRepository ? directory : null, environment);
  // An empty value resets the helper list; git runs `git credential-store --file=<file> get`.
  const credentials = options.credentialStore
    ? [
        "credential.helper=",
        `credential.helper=store --file=${shellQuote(options.credentialStore)}`,
      ]
    : [];
  const client = simpleGit({
    baseDir: directory,
    config: [...hardened.config, ...credentials],
    unsafe: overridesWeSet,
    ...(options.signal ? { abort: options.signal } : {}),
    progress: ({ stage, progress }: SimpleGitProgressEvent) =>
      options.onProgress?.({ stage, percent: progress }),
  }).env({ ...environment, ...hardened.env });
  return Object.assign(client, { transport: hardened.transport, configuredKeys: hardened.keys });
}

/**
 * The hardened settings for the drone's git in the repository at `directory`: one read of its
 * config, to share between the calls of one step (`DroneGitOptions.hardened`).
 * @example const hardened = readHardening(worktree); await commitSessionWork(worktree, message, { hardened });
 */
export function readHardening(directory: string): Promise<HardenedGit> {
  return hardenedGit(directory, gitEnvironment());
}

/** The drone's git in one repository, for the calls that take no credentials and report no progress. */
export interface LocalGit {
  /** Runs `git <args>`; throws (with git's message) unless it exits with 0. */
  raw(args: readonly string[], input?: string): Promise<string>;
  /** The config keys set in any scope. */
  configuredKeys: ReadonlySet<string>;
}

/**
 * Like droneGit in `directory` (the same hardened settings and environment), spawned directly:
 * simple-git waits 50 ms more after every git that printed nothing (`update-ref`, `reset --keep`,
 * `config`, `worktree prune`, a `for-each-ref` that found nothing), in its completion plugin
 * (`deferClose`), which no option turns off. Any exit but 0 throws, where simple-git resolves when
 * git wrote nothing to stderr (`diff-index --quiet`, `rev-parse --verify --quiet`).
 * @example const git = await localGit(worktree, { hardened: readHardening(worktree) }); await git.raw(["reset", "--keep", target]);
 */
export async function localGit(
  directory: string,
  options: Pick<DroneGitOptions, "hardened" | "signal"> = {},
): Promise<LocalGit> {
  const hardened = await (options.hardened ?? readHardening(directory));
  const call = {
    cwd: directory,
    environment: gitEnvironment(),
    hardened,
    ...(options.signal ? { signal: options.signal } : {}),
  };
  return {
    raw: (args, input) => gitOrThrow(args, input === undefined ? call : { ...call, input }),
    configuredKeys: hardened.keys,
  };
}

/** One shell word (git runs credential helpers through the shell). */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/** The first non-empty line of an error's message (git's are long). */
export function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (
    message
      .split("\n")
      .find((line) => line.trim())
      ?.trim() ?? message
  );
}

/** Removes `user:password@` from URLs (a credential written into a remote's URL). */
export function withoutCredentials(text: string): string {
  return text.replace(/(\w+:\/\/)[^/@\s]+@/g, "$1");
}

/** Git's progress lines ("Receiving objects: 45%") and its opening "Cloning into…" say no cause. */
const progressLine =
  /^(cloning into|remote: (counting|compressing|enumerating|total)|receiving objects|resolving deltas|updating files|unpacking objects)/i;

/**
 * The last `count` lines of what git printed that explain a failure (progress left out), with
 * credentials removed: `secrets` are literal values (a URL's user and password) cut anywhere.
 * @example lastLines(error, 4, ["s3cret"]) // "fatal: repository 'https://host/x.git/' not found"
 */
export function lastLines(error: unknown, count = 4, secrets: readonly string[] = []): string {
  let message = withoutCredentials(error instanceof Error ? error.message : String(error));
  for (const secret of secrets) if (secret) message = message.split(secret).join("***");
  const lines = message
    .split(/[\r\n]+/)
    .map((line) => line.trim())
    .filter((line) => line && !progressLine.test(line));
  return lines.slice(-count).join("\n") || firstLine(message);
}

/**
 * The password written into a URL, and a user name long enough to be a token (`https://<token>@host`),
 * to cut them from git's output wherever they appear.
 */
export function urlCredentials(url: string): string[] {
  try {
    const parsed = new URL(url);
    const user = decodeURIComponent(parsed.username);
    const password = decodeURIComponent(parsed.password);
    return [
      parsed.password,
      password,
      ...(user.length >= 16 ? [parsed.username, user] : []),
    ].filter((value) => value.length >= 3);
  } catch {
    return [];
  }
}

// The drone's own git (outside the sandbox) for its checkouts: never prompts for credentials, and
// runs nothing a repository configured — hooks, fsmonitor, filters, drivers, helpers.
import { hardenedGit } from "@gadget/sandbox";
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
  const hardened = await hardenedGit(inRepository ? directory : null, environment);
  const client = simpleGit({
    baseDir: directory,
    config: hardened.config,
    unsafe: overridesWeSet,
    ...(options.signal ? { abort: options.signal } : {}),
    progress: ({ stage, progress }: SimpleGitProgressEvent) =>
      options.onProgress?.({ stage, percent: progress }),
  }).env({ ...environment, ...hardened.env });
  return Object.assign(client, { transport: hardened.transport, configuredKeys: hardened.keys });
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

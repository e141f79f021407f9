// Prepares a project's clone for a turn: clone when missing, else fetch and fast-forward its
// default-branch checkout (the web IDE's files) only when that loses nothing (hand edits are kept).
// Turns work in session worktrees made from this clone (worktree.ts), never in this checkout.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { SystemError, UserError } from "@gadget/protocol";
import type { simpleGit } from "simple-git";
import { rememberCredentials, splitCredentials } from "./credentials.ts";
import { droneGit, firstLine, lastLines, urlCredentials, withoutCredentials } from "./git.ts";

export interface PrepareOptions {
  /** Root under which each project gets `<slug>/`. */
  workspaceRoot: string;
  slug: string;
  gitUrl: string;
  /** Branch to keep current; default: the remote's HEAD branch. */
  defaultBranch?: string | undefined;
  signal?: AbortSignal;
  /** Clone/fetch progress, 0–100 per stage. */
  onProgress?: (progress: { stage: string; percent: number }) => void;
}

export interface PreparedWorkspace {
  directory: string;
  /** The branch new session worktrees start from, when known (the remote's default branch). */
  defaultBranch: string | null;
  /** What was done, for a `status` event: "cloned", "fast-forwarded", "up to date", or why it was left alone. */
  outcome: "cloned" | "fast-forwarded" | "up-to-date" | "kept-local";
  message: string;
  branch: string | null;
}

/** The project's clone: its default-branch checkout, whose `.git` every session worktree shares. */
export function projectDirectory(workspaceRoot: string, slug: string): string {
  return path.join(workspaceRoot, slug);
}

/**
 * Clones or updates the project's checkout.
 * @example const { directory } = await prepareWorkspace({ workspaceRoot, slug, gitUrl });
 */
export async function prepareWorkspace(options: PrepareOptions): Promise<PreparedWorkspace> {
  const directory = projectDirectory(options.workspaceRoot, options.slug);
  // The URL's credentials go to the drone's own store, never on git's command line or in .git/config.
  const credentialStore = await rememberCredentials(
    options.workspaceRoot,
    options.slug,
    options.gitUrl,
  );
  const { url } = splitCredentials(options.gitUrl);
  if (!existsSync(path.join(directory, ".git"))) {
    if (existsSync(directory)) {
      throw new UserError(
        "workspace_not_git",
        `${directory} exists but is not a git checkout; move it away so the drone can clone ${withoutCredentials(options.gitUrl)}`,
      );
    }
    await mkdir(options.workspaceRoot, { recursive: true });
    try {
      const client = await droneGit(options.workspaceRoot, { ...options, credentialStore }, false);
      await client.clone(url, directory, [
        ...client.transport,
        "--progress",
        ...(options.defaultBranch ? ["--branch", options.defaultBranch] : []),
      ]);
    } catch (error) {
      // Git's first line is only "Cloning into…": the cause is at the end of what it printed.
      throw new SystemError(
        "clone_failed",
        `Could not clone ${withoutCredentials(options.gitUrl)}: ${lastLines(error, 4, urlCredentials(options.gitUrl))}`,
        { cause: error },
      );
    }
    const branch =
      (
        await (
          await droneGit(directory, options, true)
        )
          .revparse(["--abbrev-ref", "HEAD"])
          .catch(() => null)
      )?.trim() ?? null;
    return {
      directory,
      outcome: "cloned",
      message: `Cloned ${withoutCredentials(options.gitUrl)}`,
      branch,
      defaultBranch: options.defaultBranch ?? branch,
    };
  }

  const repository = await droneGit(directory, { ...options, credentialStore }, true);
  await forgetOriginCredentials(repository);
  try {
    // raw: simple-git's fetch() refuses --upload-pack outright, even the safe value set here.
    await repository.raw(["fetch", ...repository.transport, "--prune", "origin"]);
  } catch (error) {
    // Offline or the remote is gone: work on what we have, and say so.
    return {
      directory,
      outcome: "kept-local",
      message: `Fetch failed, using the local checkout: ${firstLine(error)}`,
      branch: null,
      defaultBranch: options.defaultBranch ?? (await remoteHeadBranch(repository)),
    };
  }
  const branch = (await repository.revparse(["--abbrev-ref", "HEAD"])).trim();
  const wanted = options.defaultBranch ?? (await remoteHeadBranch(repository));
  if (!wanted || branch !== wanted) {
    return {
      directory,
      outcome: "kept-local",
      message: `On branch ${branch}; left as it is (only ${wanted ?? "the default branch"} is fast-forwarded)`,
      branch,
      defaultBranch: wanted,
    };
  }
  const behind = Number(
    (await repository.raw(["rev-list", "--count", `HEAD..origin/${wanted}`])).trim(),
  );
  if (behind === 0)
    return {
      directory,
      outcome: "up-to-date",
      message: `${wanted} is up to date`,
      branch,
      defaultBranch: wanted,
    };
  try {
    // --ff-only never creates a merge, and git refuses if it would overwrite uncommitted edits.
    await repository.merge(["--ff-only", `origin/${wanted}`]);
    return {
      directory,
      outcome: "fast-forwarded",
      message: `Fast-forwarded ${wanted} by ${behind} commit(s)`,
      branch,
      defaultBranch: wanted,
    };
  } catch (error) {
    return {
      directory,
      outcome: "kept-local",
      message: `Did not fast-forward ${wanted} (it would lose local work): ${firstLine(error)}`,
      branch,
      defaultBranch: wanted,
    };
  }
}

/** A clone made before credentials had their own store keeps them in its origin URL: remove them. */
async function forgetOriginCredentials(repository: ReturnType<typeof simpleGit>): Promise<void> {
  const origin = (
    await repository.raw(["config", "--get", "remote.origin.url"]).catch(() => "")
  ).trim();
  const { url, storeLine } = splitCredentials(origin);
  if (storeLine) await repository.raw(["config", "remote.origin.url", url]);
}

async function remoteHeadBranch(repository: ReturnType<typeof simpleGit>): Promise<string | null> {
  try {
    const reference = (
      await repository.raw(["symbolic-ref", "--short", "refs/remotes/origin/HEAD"])
    ).trim();
    return reference.replace(/^origin\//, "") || null;
  } catch {
    return null;
  }
}

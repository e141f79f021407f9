// Prepares a project's checkout for a turn: clone when missing, else fetch and fast-forward the
// default branch only when that loses nothing (the user's uncommitted edits are kept).
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { SystemError, UserError } from "@gadget/protocol";
import { type SimpleGitProgressEvent, simpleGit } from "simple-git";

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
  /** What was done, for a `status` event: "cloned", "fast-forwarded", "up to date", or why it was left alone. */
  outcome: "cloned" | "fast-forwarded" | "up-to-date" | "kept-local";
  message: string;
  branch: string | null;
}

/** The checkout directory of a project. */
export function projectDirectory(workspaceRoot: string, slug: string): string {
  return path.join(workspaceRoot, slug);
}

/** What git needs from the drone's environment (credentials helpers, proxies), and nothing else. */
const passedToGit = [
  "PATH",
  "HOME",
  "USER",
  "LANG",
  "LC_ALL",
  "SSH_AUTH_SOCK",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "GIT_SSH_COMMAND",
];

// Never prompt for credentials on a drone (GIT_TERMINAL_PROMPT=0): fail with a message instead.
function gitEnvironment(): Record<string, string> {
  const environment: Record<string, string> = { GIT_TERMINAL_PROMPT: "0" };
  for (const name of passedToGit) {
    const value = process.env[name];
    if (value !== undefined) environment[name] = value;
  }
  return environment;
}

function git(directory: string, options: PrepareOptions) {
  return simpleGit({
    baseDir: directory,
    ...(options.signal ? { abort: options.signal } : {}),
    progress: ({ stage, progress }: SimpleGitProgressEvent) =>
      options.onProgress?.({ stage, percent: progress }),
  }).env(gitEnvironment());
}

/**
 * Clones or updates the project's checkout.
 * @example const { directory } = await prepareWorkspace({ workspaceRoot, slug, gitUrl });
 */
export async function prepareWorkspace(options: PrepareOptions): Promise<PreparedWorkspace> {
  const directory = projectDirectory(options.workspaceRoot, options.slug);
  if (!existsSync(path.join(directory, ".git"))) {
    if (existsSync(directory)) {
      throw new UserError(
        "workspace_not_git",
        `${directory} exists but is not a git checkout; move it away so the drone can clone ${options.gitUrl}`,
      );
    }
    await mkdir(options.workspaceRoot, { recursive: true });
    try {
      await git(options.workspaceRoot, options).clone(options.gitUrl, directory, [
        "--progress",
        ...(options.defaultBranch ? ["--branch", options.defaultBranch] : []),
      ]);
    } catch (error) {
      throw new SystemError(
        "clone_failed",
        `Could not clone ${options.gitUrl}: ${firstLine(error)}`,
        { cause: error },
      );
    }
    const branch =
      (
        await git(directory, options)
          .revparse(["--abbrev-ref", "HEAD"])
          .catch(() => null)
      )?.trim() ?? null;
    return { directory, outcome: "cloned", message: `Cloned ${options.gitUrl}`, branch };
  }

  const repository = git(directory, options);
  try {
    await repository.fetch(["origin", "--prune"]);
  } catch (error) {
    // Offline or the remote is gone: work on what we have, and say so.
    return {
      directory,
      outcome: "kept-local",
      message: `Fetch failed, using the local checkout: ${firstLine(error)}`,
      branch: null,
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
    };
  }
  const behind = Number(
    (await repository.raw(["rev-list", "--count", `HEAD..origin/${wanted}`])).trim(),
  );
  if (behind === 0)
    return { directory, outcome: "up-to-date", message: `${wanted} is up to date`, branch };
  try {
    // --ff-only never creates a merge, and git refuses if it would overwrite uncommitted edits.
    await repository.merge(["--ff-only", `origin/${wanted}`]);
    return {
      directory,
      outcome: "fast-forwarded",
      message: `Fast-forwarded ${wanted} by ${behind} commit(s)`,
      branch,
    };
  } catch (error) {
    return {
      directory,
      outcome: "kept-local",
      message: `Did not fast-forward ${wanted} (it would lose local work): ${firstLine(error)}`,
      branch,
    };
  }
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

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (
    message
      .split("\n")
      .find((line) => line.trim())
      ?.trim() ?? message
  );
}

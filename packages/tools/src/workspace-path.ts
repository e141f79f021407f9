// Workspace confinement: turns a model-given path into a real path inside the workspace, or refuses it.
import { lstat, readlink, realpath } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@gadget/agent";

/** A path the model gave, resolved and proven to lie inside the workspace. */
export interface WorkspacePath {
  /** Real absolute path (symbolic links resolved; for a new file, its deepest existing ancestor's). */
  absolute: string;
  /** The path relative to the workspace root as the model should see it (`.` for the root). */
  relative: string;
  /** Real path of the workspace root. */
  root: string;
  /** Whether something exists at the path. */
  exists: boolean;
}

export interface ResolveOptions {
  /** Also refuse the workspace root itself and anything under a `.git` directory. */
  forWrite?: boolean;
}

const maxSymlinkHops = 40;

/** True when `candidate` is `root` or lies under it (both absolute and normalised). */
export function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

/** Turns an absolute path under `root` into the forward-slash relative form the model uses. */
export function toRelative(root: string, absolute: string): string {
  const relative = path.relative(root, absolute);
  return relative === "" ? "." : relative.split(path.sep).join("/");
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * The real path `target` would have once created: symbolic links (dangling ones included) are
 * followed, and a missing tail is appended to the real path of its deepest existing ancestor.
 */
export async function resolveRealPath(target: string, hops = 0): Promise<string> {
  if (hops > maxSymlinkHops) {
    throw new ToolError("symlink_loop", `Too many levels of symbolic links at ${target}.`);
  }
  try {
    return await realpath(target);
  } catch (error) {
    const code = errorCode(error);
    if (code === "ELOOP") {
      throw new ToolError("symlink_loop", `Too many levels of symbolic links at ${target}.`);
    }
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
  }
  const stats = await lstat(target).catch(() => undefined);
  if (stats?.isSymbolicLink()) {
    // A dangling link: whatever is created through it lands where it points.
    const link = await readlink(target);
    return resolveRealPath(path.resolve(path.dirname(target), link), hops + 1);
  }
  const parent = path.dirname(target);
  if (parent === target) return target;
  return path.join(await resolveRealPath(parent, hops), path.basename(target));
}

/** Real path of a workspace root; a missing root is a host error, not the model's. */
export async function workspaceRoot(workspace: string): Promise<string> {
  return realpath(workspace);
}

/**
 * Resolves a path the model gave (relative to the workspace root) and refuses anything that
 * leaves the workspace: `..` escapes, absolute paths, symbolic links (dangling ones included)
 * that lead out, and with `forWrite` the root itself and anything under `.git/`.
 * @example
 * const target = await resolveInWorkspace("/work/repo", "src/app.ts", { forWrite: true });
 * await writeFile(target.absolute, "…");
 */
export async function resolveInWorkspace(
  workspace: string,
  relativePath: string | undefined,
  options: ResolveOptions = {},
): Promise<WorkspacePath> {
  const root = await workspaceRoot(workspace);
  const given = relativePath ?? ".";
  if (given.includes("\0")) {
    throw new ToolError("invalid_path", "The path contains a NUL character.");
  }
  if (path.isAbsolute(given) || given.startsWith("~")) {
    const inside = path.isAbsolute(given) && isInside(root, path.resolve(given));
    const hint = inside
      ? ` Use "${toRelative(root, path.resolve(given))}" instead.`
      : ' Give a path relative to the workspace root, e.g. "src/app.ts".';
    throw new ToolError(
      "path_outside_workspace",
      `Refused "${given}": absolute paths are not allowed; every path is relative to the workspace root.${hint}`,
    );
  }
  const lexical = path.resolve(root, given);
  if (!isInside(root, lexical)) {
    throw new ToolError(
      "path_outside_workspace",
      `Refused "${given}": it leaves the workspace through "..". Only files inside the workspace can be used; give a path relative to the workspace root.`,
    );
  }
  const real = await resolveRealPath(lexical);
  if (!isInside(root, real)) {
    throw new ToolError(
      "path_outside_workspace",
      `Refused "${given}": a symbolic link on the way leads outside the workspace. Only files inside the workspace can be used.`,
    );
  }
  const relative = toRelative(root, lexical);
  if (options.forWrite) {
    if (real === root) {
      throw new ToolError(
        "invalid_path",
        `Refused "${given}": that is the workspace root, not a file. Give a file path such as "src/app.ts".`,
      );
    }
    const segments = [...relative.split("/"), ...toRelative(root, real).split("/")];
    if (segments.some((segment) => segment.toLowerCase() === ".git")) {
      throw new ToolError(
        "git_dir_write",
        `Refused writing "${given}": files under .git/ (hooks, config, refs) are not writable by tools. Use git commands through run_command for version control.`,
      );
    }
  }
  const exists = await lstat(real).then(
    () => true,
    () => false,
  );
  return { absolute: real, relative, root, exists };
}

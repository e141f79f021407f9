// The web IDE's hand edits reach the workspace through here: list, read and write files in a
// project's checkout with the tools' confinement, answering content hashes and refusing stale writes.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { lstat, mkdir, readdir } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@gadget/agent";
import { type FileEntry, type FileRequest, type FileResponse, UserError } from "@gadget/protocol";
import { readRegularFile, resolveInWorkspace, writeRegularFile } from "@gadget/tools";
import { projectDirectory } from "./workspace/prepare.ts";
import { reopenSessionWorktree } from "./workspace/reopen.ts";
import { worktreeDirectory } from "./workspace/worktree.ts";

/** Largest file the editor reads or writes through the relay. */
const maxFileBytes = 5 * 1024 * 1024;

/** The hash the editor sends back as `baseSha` to detect a file changed under it. */
export function contentSha(content: Buffer | string): string {
  return createHash("sha256").update(content).digest("hex");
}

/**
 * Answers one file request against `workspaceRoot`: in the session's worktree when it names one
 * (a pruned one is checked out again), else in the project's default-branch checkout, which is
 * read-only (turns start their branches from what was fetched, never from hand edits there).
 * Errors are UserErrors with stable codes.
 */
export async function handleFileRequest(
  workspaceRoot: string,
  request: FileRequest,
): Promise<FileResponse> {
  const root = await rootOf(workspaceRoot, request);
  try {
    switch (request.op) {
      case "list":
        return { entries: await listDirectory(root, request.path) };
      case "read":
        return await readProjectFile(root, request.path);
      case "write":
        return await writeProjectFile(root, request.path, request.content, request.baseSha);
    }
  } catch (error) {
    if (error instanceof ToolError) {
      // Escapes and .git writes are refusals (403); anything else the path said is a bad request.
      const refused = error.code === "path_outside_workspace" || error.code === "git_dir_write";
      throw new UserError(refused ? "forbidden" : "validation_failed", error.message, {
        details: { reason: error.code },
      });
    }
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw new UserError("not_found", `No such file or directory: ${request.path || "."}`);
    }
    throw error;
  }
}

/** The directory the request works in; `not_found` (reason `no_worktree`) names what is missing. */
async function rootOf(workspaceRoot: string, request: FileRequest): Promise<string> {
  const { projectSlug, sessionId } = request;
  if (!sessionId) {
    const checkout = projectDirectory(workspaceRoot, projectSlug);
    if (!existsSync(path.join(checkout, ".git"))) {
      throw new UserError(
        "not_found",
        `This drone has no checkout of project "${projectSlug}" yet`,
      );
    }
    if (request.op === "write") {
      throw new UserError(
        "conflict",
        "The project's default-branch checkout is read-only: choose a session to edit its worktree",
        { details: { reason: "read_only" } },
      );
    }
    return checkout;
  }
  const directory = worktreeDirectory(workspaceRoot, projectSlug, sessionId);
  if (existsSync(path.join(directory, ".git"))) return directory;
  if (await reopenSessionWorktree(workspaceRoot, { projectSlug, sessionId }, `files-${sessionId}`))
    return directory;
  throw new UserError(
    "not_found",
    "This drone holds no worktree of that session: it has no files until its first turn",
    { details: { reason: "no_worktree" } },
  );
}

async function listDirectory(root: string, relative: string): Promise<FileEntry[]> {
  const target = await resolveInWorkspace(root, relative || ".");
  const entries = await readdir(target.absolute, { withFileTypes: true });
  const listed: FileEntry[] = [];
  for (const entry of entries) {
    if (entry.name === ".git") continue;
    const entryPath = path.posix.join(target.relative === "." ? "" : target.relative, entry.name);
    const type = entry.isSymbolicLink() ? "symlink" : entry.isDirectory() ? "directory" : "file";
    const size =
      type === "file" ? (await lstat(path.join(target.absolute, entry.name))).size : undefined;
    listed.push({
      name: entry.name,
      path: entryPath,
      type,
      ...(size === undefined ? {} : { size }),
    });
  }
  // Directories first, then by name, as file trees show them.
  return listed.sort((a, b) =>
    a.type === b.type
      ? a.name.localeCompare(b.name)
      : a.type === "directory"
        ? -1
        : b.type === "directory"
          ? 1
          : 0,
  );
}

async function readProjectFile(root: string, relative: string): Promise<FileResponse> {
  const target = await resolveInWorkspace(root, relative);
  const info = await lstat(target.absolute);
  if (info.isDirectory())
    throw new UserError("validation_failed", `${target.relative} is a directory`);
  if (info.size > maxFileBytes) {
    throw new UserError(
      "payload_too_large",
      `${target.relative} is ${info.size} bytes; the editor opens files up to 5 MiB`,
    );
  }
  // Only a regular file, never blocking on a named pipe the agent made (nor following a link).
  const bytes = await readRegularFile(target.absolute, target);
  if (bytes.includes(0))
    throw new UserError("validation_failed", `${target.relative} is a binary file`);
  return { path: target.relative, content: bytes.toString("utf8"), sha: contentSha(bytes) };
}

async function writeProjectFile(
  root: string,
  relative: string,
  content: string,
  baseSha: string | undefined,
): Promise<FileResponse> {
  const target = await resolveInWorkspace(root, relative, { forWrite: true });
  if (Buffer.byteLength(content) > maxFileBytes) {
    throw new UserError("payload_too_large", "Files written from the editor are limited to 5 MiB");
  }
  if (baseSha !== undefined) {
    const current = await readRegularFile(target.absolute, target).catch((error: unknown) => {
      if (error instanceof ToolError) throw error;
      return null;
    });
    if (!current || contentSha(current) !== baseSha) {
      throw new UserError(
        "conflict",
        `${target.relative} changed on the drone since you opened it; reload it and apply your edit again`,
        { details: { currentSha: current ? contentSha(current) : null } },
      );
    }
  }
  await mkdir(path.dirname(target.absolute), { recursive: true });
  await writeRegularFile(target.absolute, content, target);
  return { sha: contentSha(content) };
}

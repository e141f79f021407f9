// Opening a file the model may have prepared: only regular files, never through a symbolic link at
// the last component, never blocking (a named pipe would hold one of Node's four worker threads in
// open() until something read it), and never outside the workspace even when a directory on the
// way was swapped for a link after the path was checked.
import { constants } from "node:fs";
import { type FileHandle, open, readlink, rm } from "node:fs/promises";
import { ToolError } from "@gadget/agent";
import { isInside } from "./workspace-path.ts";

/** What a non-regular file is called in a refusal. */
function kindOf(stats: {
  isDirectory(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isSymbolicLink(): boolean;
}): string {
  if (stats.isDirectory()) return "a directory";
  if (stats.isFIFO()) return "a named pipe (FIFO)";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device";
  if (stats.isSymbolicLink()) return "a symbolic link";
  return "not a regular file";
}

function refusal(relative: string, kind: string): ToolError {
  return new ToolError(
    "not_a_file",
    `Refused ${relative}: it is ${kind}; only regular files can be read or written.`,
  );
}

/**
 * Where an open descriptor really is, from /proc (Linux). null where the system has no /proc:
 * there the path check before opening is all there is.
 */
async function descriptorPath(handle: FileHandle): Promise<string | null> {
  return readlink(`/proc/self/fd/${handle.fd}`).catch(() => null);
}

export interface OpenRegularOptions {
  /** The workspace's real root: the opened file must lie inside it. */
  root: string;
  /** The path as the model gave it, for messages. */
  relative: string;
}

/**
 * Opens a regular file inside `root` for reading. Refuses (ToolError `not_a_file`) a
 * FIFO, socket, device or directory without blocking, a symbolic link at the last component
 * (`path_outside_workspace`), and a file that turned out to lie outside the workspace.
 * @example const handle = await openRegularForRead(target.absolute, { root, relative });
 */
export async function openRegularForRead(
  absolute: string,
  options: OpenRegularOptions,
): Promise<FileHandle> {
  return openChecked(
    absolute,
    constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    options,
  );
}

/**
 * Opens (creating it when missing) a regular file inside `root` for writing, and empties it only
 * once it is known to be a regular file inside the workspace. A file this call created outside,
 * because a directory on the way was swapped for a link, is removed again.
 * @example const handle = await openRegularForWrite(target.absolute, { root, relative }); await handle.writeFile(text);
 */
export async function openRegularForWrite(
  absolute: string,
  options: OpenRegularOptions,
): Promise<FileHandle> {
  const base = constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  let handle: FileHandle;
  try {
    handle = await openChecked(
      absolute,
      base | constants.O_CREAT | constants.O_EXCL,
      options,
      true,
    );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    handle = await openChecked(absolute, base, options, false);
  }
  await handle.truncate(0);
  return handle;
}

async function openChecked(
  absolute: string,
  flags: number,
  options: OpenRegularOptions,
  creates = false,
): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(absolute, flags, 0o644);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") {
      throw new ToolError(
        "path_outside_workspace",
        `Refused ${options.relative}: it is a symbolic link (it became one after the path was checked).`,
      );
    }
    // O_WRONLY|O_NONBLOCK on a pipe nobody reads; O_NONBLOCK on a socket file.
    if (code === "ENXIO" || code === "EOPNOTSUPP") {
      throw refusal(options.relative, "not a regular file");
    }
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw refusal(options.relative, kindOf(stats));
    const real = await descriptorPath(handle);
    if (real !== null && !isInside(options.root, real)) {
      // Made outside through a swapped directory: take back what this open created.
      if (creates) await rm(real, { force: true }).catch(() => undefined);
      throw new ToolError(
        "path_outside_workspace",
        `Refused ${options.relative}: a directory on the way became a link out of the workspace.`,
      );
    }
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Reads a whole regular file inside the workspace (see openRegularForRead). */
export async function readRegularFile(
  absolute: string,
  options: OpenRegularOptions,
): Promise<Buffer> {
  const handle = await openRegularForRead(absolute, options);
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** Writes a whole regular file inside the workspace, parents already made (see openRegularForWrite). */
export async function writeRegularFile(
  absolute: string,
  content: string | Buffer,
  options: OpenRegularOptions,
): Promise<void> {
  const handle = await openRegularForWrite(absolute, options);
  try {
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}

/**
 * The text of a small file the tools read for themselves (a `.gitignore`), or undefined when it
 * is missing, not a regular file, a link, or over `maxBytes`: never an error, never a wait.
 */
export async function readOwnTextFile(
  absolute: string,
  maxBytes = 1024 * 1024,
): Promise<string | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(absolute, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > maxBytes) return undefined;
    return (await handle.readFile()).toString("utf8");
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

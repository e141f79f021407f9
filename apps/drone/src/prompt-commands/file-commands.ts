// `.gadget/commands/<name>.md` as committed at a revision: read from git's objects, never from the
// worktree the agent edits, so a turn cannot rewrite the command it runs under, and a link or a
// pipe in the worktree is nothing here (only regular blobs of the tree are read).
import type { ProjectCommand } from "@gadget/protocol";
import { commandNameSchema } from "@gadget/protocol";
import { parseFrontMatter } from "@gadget/tools";
import { droneGit } from "../workspace/git.ts";

/** Where a repository keeps its commands. */
export const COMMANDS_FOLDER = ".gadget/commands";
/** A command file larger than this is left out (and said so when it is used). */
export const MAX_COMMAND_BYTES = 64 * 1024;
/** Most command files read. */
const maxCommands = 100;

/** A command file, its front matter read. */
export interface FileCommand {
  name: string;
  description: string;
  argumentHint?: string;
  /** The file's text after its front matter; null when it is over MAX_COMMAND_BYTES. */
  body: string | null;
  path: string;
}

/** One entry of `git ls-tree -l -z`: mode, type, object, size, path. */
const treeEntry = /^(\d+) (\w+) ([0-9a-f]+) +(\d+|-)\t([\s\S]+)$/;

/**
 * The commands committed at `revision` in the repository at `directory`: regular files named
 * `<name>.md` directly in `.gadget/commands/` (links, folders and other names left out), by name.
 * None (or no such revision) is an empty list.
 * @example const commands = await readFileCommands(worktree, "HEAD");
 */
export async function readFileCommands(
  directory: string,
  revision: string,
): Promise<FileCommand[]> {
  const repository = await droneGit(directory, {}, true);
  const listing = await repository
    .raw(["ls-tree", "-l", "-z", revision, "--", `${COMMANDS_FOLDER}/`])
    .catch(() => "");
  const files: Array<{ name: string; object: string; size: number; path: string }> = [];
  for (const line of listing.split("\0")) {
    const match = treeEntry.exec(line);
    if (!match) continue;
    const [, mode, type, object, size, file] = match as unknown as string[];
    // 100644 and 100755 are files; 120000 is a link, 160000 a submodule.
    if (type !== "blob" || !(mode === "100644" || mode === "100755")) continue;
    const name = (file as string).slice(COMMANDS_FOLDER.length + 1).replace(/\.md$/, "");
    if (!(file as string).endsWith(".md") || !commandNameSchema.safeParse(name).success) continue;
    files.push({ name, object: object as string, size: Number(size), path: file as string });
  }
  files.sort((a, b) => a.name.localeCompare(b.name));
  return Promise.all(
    files.slice(0, maxCommands).map(async (file): Promise<FileCommand> => {
      if (file.size > MAX_COMMAND_BYTES)
        return { name: file.name, description: "", body: null, path: file.path };
      const text = await repository.raw(["cat-file", "blob", file.object]).catch(() => "");
      const { fields, body } = parseFrontMatter(text);
      return {
        name: file.name,
        description: oneLine(fields.description ?? "", 300),
        ...(fields["argument-hint"] ? { argumentHint: oneLine(fields["argument-hint"], 200) } : {}),
        body,
        path: file.path,
      };
    }),
  );
}

/** The listing's form of a file command. */
export function listedFileCommand(command: FileCommand): ProjectCommand {
  return {
    name: command.name,
    description:
      command.body === null
        ? `(too large: over ${MAX_COMMAND_BYTES / 1024} KiB)`
        : command.description || command.path,
    source: "file",
    ...(command.argumentHint ? { argumentHint: command.argumentHint } : {}),
  };
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

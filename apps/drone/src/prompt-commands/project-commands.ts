// The project's commands as the composer lists them (`project_commands`): the command files of the
// session's branch (or the default-branch checkout) and the MCP prompts its servers offered at the
// project's last turn here, which the drone remembers beside its worktrees.
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  MAX_PROJECT_COMMANDS,
  type ProjectCommand,
  type ProjectCommandsAnswer,
  type ProjectCommandsRequest,
  projectCommandSchema,
  UserError,
} from "@gadget/protocol";
import { z } from "zod";
import { projectDirectory } from "../workspace/prepare.ts";
import { readWorktreeRecord, worktreeDirectory } from "../workspace/worktree.ts";
import { listedFileCommand, readFileCommands } from "./file-commands.ts";

/** Where the MCP prompts of a project's last turn are remembered. */
function promptsFile(workspaceRoot: string, slug: string): string {
  return path.join(workspaceRoot, ".worktrees", slug, "mcp-prompts.json");
}

/** Remembers the MCP prompts a turn of the project saw, for the composer's list. */
export async function rememberMcpPrompts(
  workspaceRoot: string,
  slug: string,
  commands: readonly ProjectCommand[],
): Promise<void> {
  const file = promptsFile(workspaceRoot, slug);
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify(commands));
  await rename(temporary, file);
}

async function rememberedMcpPrompts(workspaceRoot: string, slug: string) {
  try {
    const text = await readFile(promptsFile(workspaceRoot, slug), "utf8");
    return z.array(projectCommandSchema).parse(JSON.parse(text));
  } catch {
    return [];
  }
}

/**
 * The project's commands: files of the session's branch head (with `sessionId`) or of the
 * checkout's head, then the remembered MCP prompts. UserError `not_found` (reason `no_worktree`)
 * when this drone holds no checkout of the project or no worktree of the session.
 * @example const { commands } = await listProjectCommands(root, { projectSlug: "shop" });
 */
export async function listProjectCommands(
  workspaceRoot: string,
  request: ProjectCommandsRequest,
): Promise<ProjectCommandsAnswer> {
  const clone = projectDirectory(workspaceRoot, request.projectSlug);
  // A session without a worktree here yet starts from the default branch: its commands are those.
  const record = request.sessionId
    ? await readWorktreeRecord(
        worktreeDirectory(workspaceRoot, request.projectSlug, request.sessionId),
      )
    : null;
  const revision = record ? `refs/heads/${record.branch}` : "HEAD";
  if (!existsSync(path.join(clone, ".git")))
    throw new UserError("not_found", "This drone holds no checkout of that project", {
      details: { reason: "no_worktree" },
    });
  const files = (await readFileCommands(clone, revision)).map(listedFileCommand);
  const names = new Set(files.map((command) => command.name));
  const prompts = (await rememberedMcpPrompts(workspaceRoot, request.projectSlug)).filter(
    (command) => !names.has(command.name),
  );
  return { commands: [...files, ...prompts].slice(0, MAX_PROJECT_COMMANDS) };
}

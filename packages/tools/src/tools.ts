// createTools: the full tool set (docs/reference.md, "Tools the agent has"), configured once per host.
import type { AnyTool } from "@gadget/agent";
import { createEditFileTool } from "./edit-file.ts";
import { createGlobTool } from "./glob.ts";
import { createGrepTool } from "./grep.ts";
import { createListDirTool } from "./list-dir.ts";
import { resolveToolsOptions, type ToolsOptions } from "./options.ts";
import { createReadFileTool } from "./read-file.ts";
import { createRunCommandTool } from "./run-command.ts";
import { createUpdateDocumentTool } from "./update-document.ts";
import { createWriteFileTool } from "./write-file.ts";

/**
 * The agent's tools: read_file, list_dir, glob, grep, write_file, edit_file, run_command and
 * update_document, all confined to the workspace the engine passes in each call's context.
 * @example
 * const tools = createTools({ secretValues: [credential], deniedCommands: [...DEFAULT_DENIED_COMMANDS, "docker"] });
 */
export function createTools(options: ToolsOptions = {}): AnyTool[] {
  // Resolved once so the tools share one ripgrep lookup and one set of defaults.
  const resolved = resolveToolsOptions(options);
  return [
    createReadFileTool(resolved),
    createListDirTool(resolved),
    createGlobTool(resolved),
    createGrepTool(resolved),
    createWriteFileTool(resolved),
    createEditFileTool(resolved),
    createRunCommandTool(resolved),
    createUpdateDocumentTool(),
  ];
}

// @gadget/tools: the agent's tools over a confined workspace (files, search, spawn-only commands),
// workspace snapshots and changes, and pre-enrichment context sources.

export type {
  ChangeStatus,
  ChangesOptions,
  FileChange,
  SnapshotOptions,
  WorkspaceChanges,
  WorkspaceSnapshot,
} from "./changes.ts";
export { cappedChanges, changesSince, snapshotWorkspace } from "./changes.ts";
export type { CommandEnvironmentOptions } from "./command-env.ts";
export { commandEnvironment, nonInteractiveEnv, passedVariables } from "./command-env.ts";
export type {
  CommandStep,
  CommandWord,
  ParseCommandOptions,
  ParsedCommand,
} from "./command-parse.ts";
export { parseCommand } from "./command-parse.ts";
export type { CommandRunResult, CommandStepResult, RunCommandOptions } from "./command-run.ts";
export { runCommand } from "./command-run.ts";
export type { ContextSourceOptions } from "./context-sources.ts";
export { workspaceContextSources } from "./context-sources.ts";
export { applyEdit, createEditFileTool } from "./edit-file.ts";
export { type FrontMatter, parseFrontMatter } from "./front-matter.ts";
export { type GitOptions, gitOrThrow } from "./git.ts";
export { defuseGitControlFiles, gitControlFileNames } from "./git-control-files.ts";
export { createGlobTool } from "./glob.ts";
export { createGrepTool } from "./grep.ts";
export { createListDirTool } from "./list-dir.ts";
export type { Logger, ResolvedToolsOptions, ToolsOptions } from "./options.ts";
export { DEFAULT_DENIED_COMMANDS, resolveToolsOptions } from "./options.ts";
export { OutputCapture, type OutputLimits } from "./output-capture.ts";
export { processGroupAlive, terminateProcessGroup } from "./process-group.ts";
export { createReadFileTool } from "./read-file.ts";
export { redactSecrets, secretForms } from "./redaction.ts";
export { readRegularFile, writeRegularFile } from "./regular-file.ts";
export { createRunCommandTool } from "./run-command.ts";
export {
  createLoadSkillTool,
  findSkills,
  SKILLS_FOLDER,
  type SkillSummary,
  type SkillsOptions,
} from "./skills.ts";
export { describeLeftOut, type LeftOut, type StagingResult, stageAll } from "./staging.ts";
export { createTools } from "./tools.ts";
export { createUpdateDocumentTool } from "./update-document.ts";
export type { ResolveOptions, WorkspacePath } from "./workspace-path.ts";
export { isInside, resolveInWorkspace } from "./workspace-path.ts";
export { createWriteFileTool } from "./write-file.ts";

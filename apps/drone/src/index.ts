// gadget-drone as a library, for tests and `pnpm start`: the runtime without the CLI.
export { type DroneConfig, readConfig, writeConfig } from "./config.ts";
export { Drone, type DroneSettings } from "./drone.ts";
export { contentSha, handleFileRequest } from "./file-relay.ts";
export { type McpLease, McpManager, type McpTurnRequest } from "./mcp/mcp-manager.ts";
export { EventJournal } from "./streaming/journal.ts";
export { type DroneSocket, EventSender } from "./streaming/sender.ts";
export type { TurnProgress } from "./turn/progress.ts";
export { ActiveTurn } from "./turn-runner.ts";
export { pushSessionBranch } from "./workspace/delivery.ts";
export { readHardening } from "./workspace/git.ts";
export { prepareWorkspace } from "./workspace/prepare.ts";
export { pruneIdleWorktrees, WorktreePruner } from "./workspace/prune.ts";
export { rewindSession } from "./workspace/rewind.ts";
export {
  commitSessionWork,
  prepareSessionWorktree,
  worktreeDirectory,
} from "./workspace/worktree.ts";
export { describeSessionWorktree } from "./workspace/worktree-state.ts";

// What the server asks of a drone's machine besides running turns: a file, a revert, a delivery, a
// worktree's state, a project's commands, a remote check, a clone, a provider check. One handler each, all behind the ack
// edge the server shares (`ackHandler`), each answer checked against the event map.
import { checkAndProbe, type EngineLogger, fetchModelList } from "@gadget/agent";
import {
  ackHandler,
  type DroneServerToClientEvents,
  deliverRequestSchema,
  fileRequestSchema,
  gitRemoteCheckRequestSchema,
  projectCloneRequestSchema,
  projectCommandsRequestSchema,
  providerCheckRequestSchema,
  sessionRewindRequestSchema,
  sessionWorktreeRequestSchema,
  turnRevertRequestSchema,
} from "@gadget/protocol";
import { handleFileRequest } from "./file-relay.ts";
import { listProjectCommands } from "./prompt-commands/project-commands.ts";
import { cloneProject } from "./workspace/clone-now.ts";
import { deliverSession } from "./workspace/delivery.ts";
import { checkRemote } from "./workspace/remote-check.ts";
import { revertTurn } from "./workspace/revert.ts";
import { rewindSession } from "./workspace/rewind.ts";
import { describeSessionWorktree } from "./workspace/worktree-state.ts";

/** The server's requests to a drone: every event it sends but `revoked`, each answered with an ack. */
export type DroneRequest = Exclude<keyof DroneServerToClientEvents, "revoked">;

/** Handlers of `E`: the payload is untrusted, the answer must be what the event map says. */
export type DroneRequestHandlers<E extends DroneRequest = DroneRequest> = {
  [Event in E]: (payload: unknown, ack: Parameters<DroneServerToClientEvents[Event]>[1]) => void;
};

/** The requests about a turn, which the drone answers itself. */
type TurnRequest =
  | "work_order"
  | "turn_cancel"
  | "turn_superseded"
  | "approval_decision"
  | "turn_message"
  | "reconciled";

/**
 * The handlers of the machine's requests, in `workspace` (the drone's workspace root).
 * @example socket.on("file_request", machineRequests(logger, workspace, beat).file_request);
 */
export function machineRequests(
  log: EngineLogger,
  workspace: string,
  /** Tells the server which checkouts this machine has (a heartbeat). */
  announceCheckouts: () => Promise<void>,
): DroneRequestHandlers<Exclude<DroneRequest, TurnRequest>> {
  return {
    file_request: ackHandler(log, fileRequestSchema, "file request", async (request) => ({
      result: await handleFileRequest(workspace, request),
    })),
    turn_revert: ackHandler(log, turnRevertRequestSchema, "turn revert", async (request) => ({
      result: await revertTurn(workspace, request),
    })),
    session_rewind: ackHandler(log, sessionRewindRequestSchema, "rewind", async (request) => ({
      result: await rewindSession(workspace, request),
    })),
    // Delivery on demand: the session's uncommitted work committed and its branch pushed.
    session_deliver: ackHandler(log, deliverRequestSchema, "deliver request", async (request) => ({
      result: await deliverSession(workspace, request),
    })),
    session_worktree: ackHandler(
      log,
      sessionWorktreeRequestSchema,
      "session worktree",
      async (request) => ({ result: await describeSessionWorktree(workspace, request) }),
    ),
    // The composer's `/` list: command files as committed, MCP prompts as last seen.
    project_commands: ackHandler(
      log,
      projectCommandsRequestSchema,
      "project commands",
      async (request) => ({ result: await listProjectCommands(workspace, request) }),
    ),
    // A new project's git URL is checked here, where its turns will clone it.
    git_remote_check: ackHandler(
      log,
      gitRemoteCheckRequestSchema,
      "git remote check",
      async (request) => ({ result: await checkRemote(request.gitUrl) }),
    ),
    project_clone: ackHandler(log, projectCloneRequestSchema, "project clone", async (request) => {
      const result = await cloneProject(workspace, request);
      // The server learns of the checkout before the answer, so its files are found at once.
      await announceCheckouts();
      return { result };
    }),
    // The user's "check" of a provider runs here, where this drone's turns call it; a saved
    // provider's check also probes it: learned quirks go back with their words.
    provider_check: ackHandler(log, providerCheckRequestSchema, "provider check", (request) =>
      checkAndProbe(request, fetchModelList(), request.probe),
    ),
  };
}

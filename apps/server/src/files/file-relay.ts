// The web IDE's file access: list/read/write in a project's workspace, relayed to an online drone
// of the user that holds that workspace. The drone decides (e.g. 409 on a stale baseSha).
import type { Models, ProjectDocument } from "@gadget/db";
import {
  type Ack,
  type FileRequest,
  type FileResponse,
  relayedCode,
  SystemError,
  UserError,
} from "@gadget/protocol";
import type { ResolvedConfig } from "../config.ts";
import { onlineDrones } from "../drones/online-drones.ts";
import type { PresenceStore } from "../drones/presence.ts";
import { type DronesNamespace, droneRoom } from "../sockets/rooms.ts";

export interface FileRelayDependencies {
  models: Models;
  presence: PresenceStore;
  config: Pick<ResolvedConfig, "droneRequestTimeoutMs">;
  /** The drones' namespace (a getter: it exists only once the HTTP server is built). */
  drones: () => DronesNamespace;
}

/** Sends `request` to a drone holding the project's workspace and answers its result. */
export async function relayFileRequest(
  dependencies: FileRelayDependencies,
  project: ProjectDocument,
  request: FileRequest,
): Promise<FileResponse> {
  const userId = String(project.user);
  const holders = (
    await onlineDrones(dependencies, userId, (presence) =>
      presence.workspaces.includes(project.slug),
    )
  ).map(({ droneId }) => droneId);
  if (holders.length === 0) {
    // Two different fixes for the user: start a drone, or let an online one clone the project.
    throw new SystemError(
      "no_drone_online",
      (await dependencies.presence.onlineOf(userId)).length === 0
        ? `No drone is online to open project "${project.name}": start one of your drones`
        : `No online drone has a checkout of project "${project.name}" yet: a drone clones it when it runs the project's first turn`,
    );
  }
  for (const droneId of holders) {
    let answers: Array<Ack<{ result: FileResponse }>>;
    try {
      answers = (await dependencies
        .drones()
        .to(droneRoom(droneId))
        .timeout(dependencies.config.droneRequestTimeoutMs)
        .emitWithAck("file_request", request)) as Array<Ack<{ result: FileResponse }>>;
    } catch {
      continue;
    }
    const answer = answers[0];
    if (!answer) continue;
    if (answer.ok) return answer.result;
    throw new UserError(relayedCode(answer.error.code), answer.error.message, {
      details: answer.error.details,
    });
  }
  throw new SystemError(
    "no_drone_online",
    `No drone holding project "${project.name}" answered in time; try again`,
  );
}

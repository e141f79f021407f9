// The web IDE's file access: list/read/write in a project's workspace, relayed to an online drone
// of the user that holds that workspace. The drone decides (e.g. 409 on a stale baseSha).
import type { ProjectDocument } from "@gadget/db";
import {
  type Ack,
  type FileRequest,
  type FileResponse,
  SystemError,
  UserError,
} from "@gadget/protocol";
import { droneRoom, type ServerContext } from "../context.ts";

/** Sends `request` to a drone holding the project's workspace and answers its result. */
export async function relayFileRequest(
  context: ServerContext,
  project: ProjectDocument,
  request: FileRequest,
): Promise<FileResponse> {
  const droneIds = await context.presence.onlineOf(String(project.user));
  const presences = await context.presence.read(droneIds);
  const holders: string[] = [];
  for (const [index, id] of droneIds.entries()) {
    const state = presences[index];
    if (!state?.online || !state.workspaces.includes(project.slug)) continue;
    const drone = await context.models.Drone.findById(id).select({ user: 1, revokedAt: 1 }).lean();
    if (drone && String(drone.user) === String(project.user) && !drone.revokedAt) holders.push(id);
  }
  if (holders.length === 0) {
    // Two different fixes for the user: start a drone, or let an online one clone the project.
    throw new SystemError(
      "no_drone_online",
      droneIds.length === 0
        ? `No drone is online to open project "${project.name}": start one of your drones`
        : `No online drone has a checkout of project "${project.name}" yet: a drone clones it when it runs the project's first turn`,
    );
  }
  for (const droneId of holders) {
    let answers: Array<Ack<{ result: FileResponse }>>;
    try {
      answers = (await context.drones
        .to(droneRoom(droneId))
        .timeout(context.config.droneRequestTimeoutMs)
        .emitWithAck("file_request", request)) as Array<Ack<{ result: FileResponse }>>;
    } catch {
      continue;
    }
    const answer = answers[0];
    if (!answer) continue;
    if (answer.ok) return answer.result;
    throw new UserError(answer.error.code, answer.error.message, { details: answer.error.details });
  }
  throw new SystemError(
    "no_drone_online",
    `No drone holding project "${project.name}" answered in time; try again`,
  );
}

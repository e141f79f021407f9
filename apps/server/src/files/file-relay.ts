// The web IDE's file access: list/read/write in a project's default-branch checkout (read-only) or
// in a session's worktree, relayed to an online drone of the user that holds it. The drone
// decides (e.g. 409 on a stale baseSha).
import type { ProjectDocument } from "@gadget/db";
import { type FileRequest, rest, SystemError } from "@gadget/protocol";
import type { z } from "zod";
import { type AskHoldersDependencies, askHolders } from "../drones/ask-holders.ts";

export type FileRelayDependencies = AskHoldersDependencies;

/** What the drone answers each request with: the answer of the route that asked. */
const answerSchemas = {
  list: rest.files.list.answers[200],
  read: rest.files.read.answers[200],
  write: rest.files.write.answers[200],
};
type FileAnswer<Op extends FileRequest["op"]> = z.output<(typeof answerSchemas)[Op]>;

/**
 * Sends `request` to a drone holding the project's workspace (for a session, the drone that ran
 * its last turn first) and answers its result.
 */
export async function relayFileRequest<Op extends FileRequest["op"]>(
  dependencies: FileRelayDependencies,
  project: ProjectDocument,
  request: FileRequest & { op: Op },
  sessionDrone: string | null = null,
): Promise<FileAnswer<Op>> {
  const userId = String(project.user);
  const answer = await askHolders(dependencies, {
    userId,
    projectSlug: project.slug,
    event: "file_request",
    request,
    preferred: sessionDrone,
    // Another drone of the user may hold the session's worktree.
    passOn: (error) =>
      (error.details as { reason?: unknown } | undefined)?.reason === "no_worktree",
    parse: (result) => answerSchemas[request.op].parse(result) as FileAnswer<Op>,
  });
  if (answer.answered) return answer.result;
  // `reason` tells the page which state it is in (it lists again on its own in each).
  if (answer.holders === 0) {
    // Two different fixes for the user: start a drone, or let an online one clone the project.
    const offline = (await dependencies.presence.onlineOf(userId)).length === 0;
    throw new SystemError(
      "no_drone_online",
      offline
        ? `No drone is online to open project "${project.name}": start one of your drones`
        : `No online drone has a checkout of project "${project.name}" yet: a drone clones it when it runs the project's first turn`,
      { details: { reason: offline ? "offline" : "no_checkout" } },
    );
  }
  throw new SystemError(
    "no_drone_online",
    request.sessionId
      ? `No online drone holds this session's worktree of project "${project.name}": start the drone that ran the session's turns`
      : `No drone holding project "${project.name}" answered in time; try again`,
    { details: { reason: request.sessionId ? "no_worktree" : "no_answer" } },
  );
}

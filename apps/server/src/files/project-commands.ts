// The project's `/name` commands for the composer (`GET /api/projects/:id/commands`), asked of a
// drone holding its checkout: command files live in the repository, and MCP prompts are what the
// project's servers offered on that drone.
import type { ProjectDocument } from "@gadget/db";
import {
  type ProjectCommandsAnswer,
  projectCommandsAnswerSchema,
  SystemError,
} from "@gadget/protocol";
import { type AskHoldersDependencies, askHolders } from "../drones/ask-holders.ts";

/**
 * The commands of the project (of the session's branch when `sessionId` is given), from the first
 * holding drone that answers: the session's last drone first. 503 when none does.
 */
export async function relayProjectCommands(
  dependencies: AskHoldersDependencies,
  project: ProjectDocument,
  session: { sessionId?: string | undefined; drone: string | null },
): Promise<ProjectCommandsAnswer> {
  const answer = await askHolders(dependencies, {
    userId: String(project.user),
    projectSlug: project.slug,
    event: "project_commands",
    request: {
      projectSlug: project.slug,
      ...(session.sessionId ? { sessionId: session.sessionId } : {}),
    },
    preferred: session.drone,
    // For a keystroke's list: a drone too old to know the request is not waited for long.
    timeoutMs: Math.min(5_000, dependencies.config.droneRequestTimeoutMs),
    passOn: (error) =>
      (error.details as { reason?: unknown } | undefined)?.reason === "no_worktree",
    parse: (result) => projectCommandsAnswerSchema.parse(result),
  });
  if (answer.answered) return answer.result;
  throw new SystemError(
    "no_drone_online",
    answer.holders === 0
      ? `No online drone holds project "${project.name}" to list its commands`
      : `No drone holding project "${project.name}" answered in time; try again`,
  );
}

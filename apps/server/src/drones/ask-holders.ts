// Requests only the drone holding a project's checkout can answer (files, a session's worktree,
// reverts, deliveries): asked one online holder at a time, the preferred one first.
import type { Models } from "@gadget/db";
import {
  type Ack,
  type ApiErrorBody,
  type DroneServerToClientEvents,
  relayedCode,
  SystemError,
  UserError,
} from "@gadget/protocol";
import type { ResolvedConfig } from "../config.ts";
import { type DronesNamespace, droneRoom } from "../sockets/rooms.ts";
import { onlineDrones } from "./online-drones.ts";
import type { PresenceStore } from "./presence.ts";

export interface AskHoldersDependencies {
  models: Models;
  presence: PresenceStore;
  config: Pick<ResolvedConfig, "droneRequestTimeoutMs">;
  /** The drones' namespace. */
  drones: DronesNamespace;
}

export interface AskHolders<T> {
  userId: string;
  projectSlug: string;
  event: Exclude<keyof DroneServerToClientEvents, "revoked">;
  request: unknown;
  /** Asked first: the drone that ran the session's last turn holds its worktree. */
  preferred?: string | null | undefined;
  /** A refusal that means "not here": the next holder is asked (another may hold the worktree). */
  passOn?: (error: ApiErrorBody["error"]) => boolean;
  /** How long each holder has to answer; default the server's `droneRequestTimeoutMs`. */
  timeoutMs?: number;
  /** Checks the peer's answer before anyone uses it. */
  parse: (result: unknown) => T;
}

/**
 * What the holders said: the first result, else how many holders there were (0: none online,
 * more: none answered in time or all passed it on). A refusal other than `passOn` is thrown.
 * @example const answer = await askHolders(dependencies, { userId, projectSlug, event: "file_request", request, parse });
 */
export async function askHolders<T>(
  dependencies: AskHoldersDependencies,
  ask: AskHolders<T>,
): Promise<{ answered: true; result: T } | { answered: false; holders: number }> {
  const holders =
    // The preferred drone ran the session's last turn: it holds the worktree even before its next
    // heartbeat lists a checkout it cloned moments ago.
    (
      await onlineDrones(
        dependencies,
        ask.userId,
        (presence, droneId) =>
          droneId === ask.preferred || presence.workspaces.includes(ask.projectSlug),
      )
    )
      .map(({ droneId }) => droneId)
      .sort((a, b) => Number(b === ask.preferred) - Number(a === ask.preferred));
  for (const droneId of holders) {
    let answers: Array<Ack<{ result: unknown }>>;
    try {
      answers = (await dependencies.drones
        .to(droneRoom(droneId))
        .timeout(ask.timeoutMs ?? dependencies.config.droneRequestTimeoutMs)
        // biome-ignore lint/suspicious/noExplicitAny: one helper for every holder request
        .emitWithAck(ask.event, ask.request as any)) as Array<Ack<{ result: unknown }>>;
    } catch {
      continue;
    }
    const answer = answers[0];
    if (!answer) continue;
    if (answer.ok) return { answered: true, result: parsed(ask, answer.result) };
    if (ask.passOn?.(answer.error)) continue;
    throw new UserError(relayedCode(answer.error.code), answer.error.message, {
      details: answer.error.details,
    });
  }
  return { answered: false, holders: holders.length };
}

/** A peer's answer, checked: an unreadable one is the drone's fault (500), not the user's. */
function parsed<T>(ask: AskHolders<T>, result: unknown): T {
  try {
    return ask.parse(result);
  } catch (error) {
    throw new SystemError("internal", `The drone answered ${ask.event} with something unreadable`, {
      cause: error,
    });
  }
}

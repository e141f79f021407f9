// What a turn's status, guard, exit and errors are called on screen, and how long it ran: the
// words shared by the turn panel, its status line and its stats.
import type { ChatTurn, ExitReason, TurnStatus } from "@gadget/protocol";
import { isFinalTurnStatus } from "@gadget/protocol";
import { timeOf } from "../lib/format.ts";
import type { TurnView } from "../live/turn-view.ts";

export const statusWords: Record<TurnStatus, string> = {
  queued: "Waiting for a drone",
  dispatched: "Starting",
  processing: "Working",
  awaiting_approval: "Waiting for your approval",
  completed: "Completed",
  failed: "Failed",
  cancelled: "Stopped",
  interrupted: "Interrupted",
};

/**
 * Why a guard stopped a turn (repeated calls, a limit), in words: such a turn ends "completed"
 * with a summary, but it did not finish the work as an answered turn did.
 */
export const guardWords: Partial<Record<ExitReason, string>> = {
  all_tools_duplicate: "it repeated the same tool calls",
  stuck: "it was going in circles",
  max_passes: "it reached the pass limit",
  max_tool_calls: "it reached the tool-call limit",
  token_budget: "it used up its token budget",
  budget_exceeded: "it used up its cost budget",
};

/** The guard that stopped the turn, when one did. */
export function guardOf(turn: ChatTurn, view: TurnView): ExitReason | null {
  if (turn.status !== "completed") return null;
  const reason = turn.exitReason ?? view.done?.reason ?? null;
  return reason && guardWords[reason] ? reason : null;
}

/** What the status line says first: the guard, the wait for the worktree, else the status. */
export function statusWordOf(turn: ChatTurn, view: TurnView): string {
  const guard = guardOf(turn, view);
  if (guard) return `Stopped by a guard: ${guardWords[guard]}`;
  if (droneOfflineOf(turn, view)) return "Drone offline";
  if (quotaWaitOf(turn, view)) return "Waiting for the provider's rate limit";
  if (view.waitingForWorktree && !isFinalTurnStatus(turn.status))
    return "Waiting for the session's worktree";
  return statusWords[turn.status];
}

/** A turn error's title: what went wrong, before the cause in the provider's or git's words. */
export function errorTitle(code: string): string {
  if (code === "clone_failed") return "Could not clone the project";
  if (code === "provider_unavailable") return "The model provider could not be reached";
  if (code === "provider_auth") return "The model provider refused the API key";
  if (code === "provider_model_not_found") return "The model provider does not know this model";
  if (code.startsWith("provider_")) return "The model provider refused the request";
  if (code.startsWith("workspace") || code.startsWith("worktree"))
    return "The drone could not prepare the workspace";
  return "The turn failed";
}

export const exitWords: Record<string, string> = {
  completed: "answered",
  max_passes: "stopped at the pass limit",
  max_tool_calls: "stopped at the tool-call limit",
  token_budget: "stopped at the token budget",
  budget_exceeded: "stopped at the cost budget",
  approval_needed: "waiting for approval",
  stuck: "stopped: it was going in circles",
  all_tools_duplicate: "stopped: it repeated the same calls",
  cancelled: "stopped by you",
  interrupted: "its drone went away",
  drone_shutdown: "its drone was shut down",
  quota_wait_exceeded: "the provider's rate limit lasted too long",
  error: "ended by an error",
};

/** The cost of a turn whose provider has no prices. */
export const UNKNOWN_COST = "—";

/** How long the turn ran, or has run until `now`. */
export function elapsedOf(turn: ChatTurn, view: TurnView, now: number): number | null {
  const start = timeOf(turn.startedAt) ?? view.firstEventAt ?? timeOf(turn.createdAt);
  if (start === null) return null;
  const final = isFinalTurnStatus(turn.status);
  const end = timeOf(turn.finishedAt) ?? view.done?.at ?? (final ? view.lastEventAt : null) ?? now;
  return Math.max(0, end - start);
}

/** A live turn's offline drone: since when, and when the turn is interrupted unless it returns. */
export function droneOfflineOf(
  turn: ChatTurn,
  view: TurnView,
): { until: number; droneName: string | null } | null {
  if (isFinalTurnStatus(turn.status)) return null;
  if (view.droneLost) return view.droneLost;
  const waiting = turn.waiting;
  if (waiting?.reason !== "drone_offline" || !waiting.until) return null;
  return { until: timeOf(waiting.until) ?? 0, droneName: view.droneName };
}

/** "0:42": what is left of a wait, never negative. */
export function timeLeft(until: number, now: number): string {
  const seconds = Math.max(0, Math.ceil((until - now) / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

/** The words for a turn whose drone is offline, with the time left before it is interrupted. */
export function droneOfflineWords(offline: { until: number }, now: number): string {
  return now < offline.until
    ? `interrupted in ${timeLeft(offline.until, now)} unless it comes back`
    : "interrupting it now";
}

/** A live turn waiting out its provider's rate limit: when it calls again. */
export function quotaWaitOf(turn: ChatTurn, view: TurnView): { until: number } | null {
  if (isFinalTurnStatus(turn.status)) return null;
  if (view.quotaWait) return view.quotaWait;
  const waiting = turn.waiting;
  if (waiting?.reason !== "provider_rate_limit" || !waiting.until) return null;
  return { until: timeOf(waiting.until) ?? 0 };
}

/** "goes on by itself at 14:05:09 (in 0:42)". */
export function quotaWaitWords(wait: { until: number }, now: number): string {
  const at = new Date(wait.until).toLocaleTimeString();
  return `goes on by itself at ${at} (in ${timeLeft(wait.until, now)})`;
}

// What the engine asks of a host's hooks (the drone runs them in the turn's sandbox); what they
// mean for the loop is in hooks.ts.
import type { HookEventData, HookEventName } from "@gadget/protocol";

/** What a hook is asked about (the host adds the turn's id before it reaches the hook's stdin). */
export interface HookInvocation {
  event: HookEventName;
  tool?: string;
  callId?: string;
  params?: unknown;
  result?: { ok: boolean; output: string; summary: string };
  /** Stop: the answer the model gave. */
  response?: string;
}

/** What the hooks of one event came to, with one record per hook that ran (its `hook` event). */
export interface HookVerdict {
  runs: HookEventData[];
  /** Set when a hook exited 2: its stderr (the first blocking hook ends the event's chain). */
  blocked?: string;
  /** The params a PreToolUse hook replaced the call's with (the last one's, if several). */
  params?: Record<string, unknown>;
  /** Context the hooks added, joined. */
  context?: string;
}

/** The host's hooks for one turn. */
export interface TurnHooks {
  /** Whether any hook is set for `event` (and, for tool events, matches `tool`). */
  has(event: HookEventName, tool?: string): boolean;
  /** Runs the matching hooks in order; never throws for a hook's own failure (that is a run record). */
  run(invocation: HookInvocation, options: { signal: AbortSignal }): Promise<HookVerdict>;
}

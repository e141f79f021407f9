// Loop detection (OpenHands' stuck detector, opencode's doom-loop guard): counts each call
// signature since the workspace last changed, and flags repeats and repeated failures.
import type { SignatureRecord, TurnState } from "./state.ts";

export interface StuckLimits {
  stuckRepeatLimit: number;
  stuckFailureLimit: number;
  signatureWindow: number;
}

function find(state: TurnState, signature: string): SignatureRecord | undefined {
  return state.executedToolSignatures.find((record) => record.signature === signature);
}

/** Whether this exact call already ran since the last change to the workspace. */
export function wasExecuted(state: TurnState, signature: string): boolean {
  return find(state, signature) !== undefined;
}

/**
 * Records one executed call. A successful write by a different call starts a new epoch: the
 * workspace changed, so re-reading a file or re-running the tests is progress, not a loop.
 */
export function recordExecution(
  state: TurnState,
  signature: string,
  ok: boolean,
  isWrite: boolean,
  limits: StuckLimits,
): void {
  let record = find(state, signature);
  if (isWrite && ok) {
    state.executedToolSignatures = record ? [record] : [];
  }
  if (!record) {
    record = { signature, count: 0, failures: 0 };
    state.executedToolSignatures.push(record);
    if (state.executedToolSignatures.length > limits.signatureWindow)
      state.executedToolSignatures.shift();
  }
  record.count += 1;
  if (!ok) record.failures += 1;
}

/** The stuck verdict after a response's calls ran, if any call hit a repeat limit. */
export function stuckVerdict(
  state: TurnState,
  signatures: Array<{ signature: string; tool: string }>,
  limits: StuckLimits,
): string | undefined {
  for (const { signature, tool } of signatures) {
    const record = find(state, signature);
    if (!record) continue;
    if (record.failures >= limits.stuckFailureLimit)
      return `${tool} failed ${record.failures} times with the same arguments`;
    if (record.count >= limits.stuckRepeatLimit)
      return `${tool} was called ${record.count} times with the same arguments`;
  }
  return undefined;
}

/**
 * For a response whose calls all ran before (they are not run again): `stuck` if running them
 * would hit a repeat limit, else `all_tools_duplicate`.
 */
export function duplicateVerdict(
  state: TurnState,
  signatures: Array<{ signature: string; tool: string }>,
  limits: StuckLimits,
): { reason: "stuck" | "all_tools_duplicate"; detail: string } {
  for (const { signature, tool } of signatures) {
    const record = find(state, signature);
    if (!record) continue;
    if (record.failures + 1 >= limits.stuckFailureLimit && record.failures > 0)
      return {
        reason: "stuck",
        detail: `${tool} was repeated after failing with the same arguments`,
      };
    if (record.count + 1 >= limits.stuckRepeatLimit)
      return {
        reason: "stuck",
        detail: `${tool} was called ${record.count + 1} times with the same arguments`,
      };
  }
  const names = [...new Set(signatures.map((entry) => entry.tool))].join(", ");
  return { reason: "all_tools_duplicate", detail: `every call (${names}) repeated an earlier one` };
}

/** Forgets signatures whose results the model can no longer see (pruned or summarised away). */
export function forgetSignatures(state: TurnState, signatures: Set<string>): void {
  if (signatures.size === 0) return;
  state.executedToolSignatures = state.executedToolSignatures.filter(
    (record) => !signatures.has(record.signature),
  );
}

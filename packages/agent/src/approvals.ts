// Approvals (docs/architecture.md, "Tools, approvals and pauses"): which calls need a decision, and a channel that delivers decisions
// arriving asynchronously (e.g. from the server over a socket) to the waiting engine.
import type { ApprovalPolicy, ApprovalRequest } from "@gadget/protocol";
import { abortError } from "./abort.ts";
import type { AnyTool } from "./tool.ts";

/** The user's answer to one approval request. */
export interface ApprovalDecision {
  approve: boolean;
  /** With `approve`, replacement arguments (validated against the tool's schema before use). */
  input?: unknown;
  /** With `approve`: later calls with the same standing-approval key run without asking. */
  alwaysAllow?: boolean;
}

/** Called for each call needing approval; resolves with the decision. Must honour `signal`. */
export type ApprovalHandler = (
  request: ApprovalRequest,
  context: { signal: AbortSignal },
) => Promise<ApprovalDecision>;

/**
 * Whether `policy` asks before running `tool` with `input`: `on-write` asks for every write call
 * except one whose standing-approval key (run_command: the exact command) is in `allowed`.
 */
export function needsApproval(
  policy: ApprovalPolicy,
  tool: AnyTool,
  input?: unknown,
  allowed: ReadonlySet<string> = new Set(),
): boolean {
  if (policy !== "on-write" || tool.permission !== "write") return false;
  return !(allowed.size > 0 && input !== undefined && allowed.has(standingKey(tool, input) ?? ""));
}

/** The call's standing-approval key, when its tool offers one (and it can tell for this input). */
export function standingKey(tool: AnyTool, input: unknown): string | undefined {
  if (!tool.standingApproval) return undefined;
  try {
    return tool.standingApproval(input) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * A stable approval id: the same call of the same pass gets the same id after a resume, and
 * ids never collide even when a provider reuses call ids across responses.
 */
export function approvalIdFor(pass: number, position: number): string {
  return `approval-${pass}-${position + 1}`;
}

/** The result text a declined call returns to the model. */
export const declinedOutput = "declined by the user";

/**
 * Delivers decisions to a running turn. Decisions may arrive before the engine asks (they are
 * kept until asked for) or while it waits.
 *
 * @example
 * const approvals = new ApprovalChannel();
 * socket.on("approval_decision", (d, ack) => ack({ ok: approvals.decide(d.approvalId, d) }));
 * for await (const event of runTurn(input, { onApproval: approvals.handler })) relay(event);
 */
export class ApprovalChannel {
  #decided = new Map<string, ApprovalDecision>();
  #waiting = new Map<string, (decision: ApprovalDecision) => void>();
  #requests = new Map<string, ApprovalRequest>();

  /** Gives the decision for `approvalId`. Returns true when the engine was waiting for it. */
  decide(approvalId: string, decision: ApprovalDecision): boolean {
    const waiter = this.#waiting.get(approvalId);
    const value: ApprovalDecision = { approve: decision.approve };
    if (decision.input !== undefined) value.input = decision.input;
    if (decision.alwaysAllow) value.alwaysAllow = true;
    if (waiter) {
      this.#waiting.delete(approvalId);
      this.#requests.delete(approvalId);
      waiter(value);
      return true;
    }
    this.#decided.set(approvalId, value);
    return false;
  }

  /** Requests the engine is waiting on now. */
  pending(): ApprovalRequest[] {
    return [...this.#requests.values()];
  }

  /** Pass as `TurnOptions.onApproval`. */
  readonly handler: ApprovalHandler = (request, { signal }) => {
    const known = this.#decided.get(request.id);
    if (known) {
      this.#decided.delete(request.id);
      return Promise.resolve(known);
    }
    if (signal.aborted) return Promise.reject(abortError(signal));
    return new Promise<ApprovalDecision>((resolve, reject) => {
      const onAbort = () => {
        this.#waiting.delete(request.id);
        this.#requests.delete(request.id);
        reject(abortError(signal));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#requests.set(request.id, request);
      this.#waiting.set(request.id, (decision) => {
        signal.removeEventListener("abort", onAbort);
        resolve(decision);
      });
    });
  };
}

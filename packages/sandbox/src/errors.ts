// The sandbox's one error: a command that cannot be confined is never run unconfined.
import { SystemError } from "@gadget/protocol";

/**
 * `sandbox_unavailable`: this machine cannot confine commands (no bwrap, user namespaces off);
 * `sandbox_failed`: the sandbox refused to start one command (the command did not run).
 */
export class SandboxError extends SystemError {
  constructor(
    code: "sandbox_unavailable" | "sandbox_failed",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

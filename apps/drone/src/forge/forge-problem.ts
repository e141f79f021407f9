// The error a forge's API answer raises inside the pull-request call: refused, unreadable or
// inconsistent, in words a user can act on (the call turns it into its outcome's `error`).
import { SystemError } from "@gadget/protocol";

/** A forge (GitHub, GitLab, Gitea) answered, but not with what the call needed. */
export class ForgeProblem extends SystemError {
  constructor(message: string) {
    super("forge_failed", message);
  }
}

// The error a tool throws to tell the model what went wrong; the engine makes it a failed result.
import { type ToolErrorCode, UserError } from "@gadget/protocol";

/**
 * An error a tool throws to tell the model what went wrong and what to do instead
 * (e.g. "path escapes the workspace"). The engine turns it into a failed tool result.
 * @example throw new ToolError("not_found", `${path} does not exist; list the directory first`);
 */
export class ToolError extends UserError {
  declare readonly code: ToolErrorCode;

  constructor(code: ToolErrorCode, message: string) {
    super(code, message);
  }
}

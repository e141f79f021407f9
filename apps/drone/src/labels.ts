// The labels a drone says about itself, so turns can require them: its operating system, its
// architecture and what confines its commands. The user's own come from `register --label`.
import { droneLabelSchema, UserError } from "@gadget/protocol";

/** `os=linux|macos|windows`, `arch=x64|arm64|…`, `sandbox=bubblewrap|seatbelt|none`. */
export function automaticLabels(options: {
  platform: NodeJS.Platform;
  arch: string;
  sandboxKind: string;
}): string[] {
  const os =
    options.platform === "darwin"
      ? "macos"
      : options.platform === "win32"
        ? "windows"
        : options.platform;
  return [`os=${os}`, `arch=${options.arch}`, `sandbox=${options.sandboxKind}`];
}

/** Checks one `--label` value (commander collects them); a bad one stops the command in words. */
export function collectLabel(value: string, previous: string[] = []): string[] {
  const parsed = droneLabelSchema.safeParse(value);
  if (!parsed.success) {
    throw new UserError(
      "validation_failed",
      `--label ${JSON.stringify(value)}: ${parsed.error.issues[0]?.message ?? "not a label"}`,
    );
  }
  return [...previous, parsed.data];
}

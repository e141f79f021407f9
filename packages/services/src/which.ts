// Finds an executable on PATH without spawning a shell.
import { accessSync, constants } from "node:fs";
import path from "node:path";

/** The full path of `command` on PATH, or null. */
export function which(command: string): string | null {
  for (const directory of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!directory) continue;
    const candidate = path.join(directory, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

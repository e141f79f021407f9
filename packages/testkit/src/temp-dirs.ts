// Directories tests make in the temp folder, removed after each test file by the setup file every
// vitest project runs (`vitest-setup.ts`), so a test run leaves the temp folder as it found it.
import { mkdtempSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

const made = new Set<string>();

/**
 * A fresh directory in the temp folder, removed when the test file ends.
 * @example const home = await makeTempDir("gadget-drone-home-");
 */
export async function makeTempDir(prefix: string): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), prefix));
  made.add(directory);
  return directory;
}

/** `makeTempDir` for synchronous code. */
export function makeTempDirSync(prefix: string): string {
  const directory = mkdtempSync(path.join(tmpdir(), prefix));
  made.add(directory);
  return directory;
}

/** Removes every directory made so far (the setup file calls it after each test file). */
export async function removeTempDirs(): Promise<void> {
  const directories = [...made];
  made.clear();
  await Promise.all(
    directories.map((directory) =>
      // A process the test started may still be writing there for a moment (git, a drone).
      rm(directory, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }).catch(() =>
        rmSync(directory, { recursive: true, force: true }),
      ),
    ),
  );
}

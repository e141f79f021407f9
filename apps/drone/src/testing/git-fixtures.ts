// Test fixtures: a local bare repository to act as a project's remote, and a clone to push from.
import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "Test",
      GIT_AUTHOR_EMAIL: "test@example.com",
      GIT_COMMITTER_NAME: "Test",
      GIT_COMMITTER_EMAIL: "test@example.com",
    },
  });
}

export interface RemoteFixture {
  /** The bare repository: use as a project's gitUrl. */
  bare: string;
  /** Commits a file to the remote's main branch (through a scratch clone). */
  commit(file: string, content: string, message?: string): Promise<void>;
}

/** Creates a bare repository with `files` committed on `main`. */
export async function createRemote(
  files: Record<string, string | Uint8Array>,
): Promise<RemoteFixture> {
  const root = await makeTempDir("gadget-remote-");
  const bare = path.join(root, "project.git");
  const scratch = path.join(root, "scratch");
  git(root, "init", "--bare", "--initial-branch=main", bare);
  git(root, "clone", bare, scratch);
  git(scratch, "checkout", "-B", "main");
  const commit = async (file: string, content: string, message = `update ${file}`) => {
    await writeFile(path.join(scratch, file), content);
    git(scratch, "add", "-A");
    git(scratch, "commit", "-m", message);
    git(scratch, "push", "origin", "main");
  };
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(scratch, file)), { recursive: true });
    await writeFile(path.join(scratch, file), content);
  }
  git(scratch, "add", "-A");
  git(scratch, "commit", "-m", "initial");
  git(scratch, "push", "-u", "origin", "main");
  return { bare, commit };
}

export { git as runGit };

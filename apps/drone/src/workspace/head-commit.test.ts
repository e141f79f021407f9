// The commit read from a worktree's git files is the one git names, or none when git must be asked.
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { createRemote, runGit } from "../testing/git-fixtures.ts";
import { looseHeadCommit } from "./head-commit.ts";

async function cloneWithWorktree() {
  const remote = await createRemote({ "README.md": "# Demo\n" });
  const root = await makeTempDir("gadget-head-");
  const clone = path.join(root, "clone");
  runGit(root, "clone", "-q", remote.bare, clone);
  const worktree = path.join(root, "session");
  runGit(clone, "worktree", "add", "-q", "-b", "gadget/session", worktree);
  runGit(worktree, "commit", "-q", "--allow-empty", "-m", "The session's work");
  return { clone, worktree };
}

describe("looseHeadCommit", () => {
  it("reads the commit git names for a linked worktree's branch and for a clone's", async () => {
    const { clone, worktree } = await cloneWithWorktree();
    const sessionHead = runGit(worktree, "rev-parse", "HEAD").trim();
    expect(await looseHeadCommit(worktree)).toBe(sessionHead);
    expect(await looseHeadCommit(clone)).toBe(runGit(clone, "rev-parse", "HEAD").trim());
    expect(sessionHead).not.toBe(runGit(clone, "rev-parse", "HEAD").trim());
  });

  it("reads a detached HEAD, and leaves a packed branch or no repository to git", async () => {
    const { clone, worktree } = await cloneWithWorktree();
    runGit(worktree, "checkout", "-q", "--detach");
    expect(await looseHeadCommit(worktree)).toBe(runGit(worktree, "rev-parse", "HEAD").trim());
    runGit(worktree, "checkout", "-q", "gadget/session");
    runGit(clone, "pack-refs", "--all");
    expect(await looseHeadCommit(worktree)).toBeNull();
    expect(await looseHeadCommit(path.dirname(clone))).toBeNull();
  });
});

// Pushing a session's branch: it lands on origin, a program the clone's config names never runs,
// and a refused push comes back in words without the credential.
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { createRemote, runGit } from "../testing/git-fixtures.ts";
import { deliverSession, pushProblem, pushSessionBranch } from "./delivery.ts";
import { tryLock } from "./lock.ts";
import { prepareWorkspace } from "./prepare.ts";
import { commitSessionWork, prepareSessionWorktree, worktreeLockFile } from "./worktree.ts";

const session = { _id: "665f1c2e9b1d4a0012345678", name: "Fix the login page" };

async function sessionWorktree() {
  const remote = await createRemote({ "README.md": "# Demo\n" });
  const workspaceRoot = await makeTempDir("gadget-ws-");
  const prepared = await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
  const worktree = await prepareSessionWorktree({
    workspaceRoot,
    slug: "demo",
    clone: prepared.directory,
    session,
    branchPrefix: "gadget/",
    defaultBranch: prepared.defaultBranch,
  });
  return { remote, workspaceRoot, clone: prepared.directory, worktree };
}

describe("delivery", () => {
  it("pushes the session's branch to origin, running no receive-pack the clone configures", async () => {
    const { remote, clone, worktree } = await sessionWorktree();
    const marker = path.join(await makeTempDir("gadget-marker-"), "ran");
    runGit(clone, "config", "remote.origin.receivepack", `touch ${marker}; git-receive-pack`);
    await writeFile(path.join(worktree.directory, "login.txt"), "fixed\n");
    const commit = await commitSessionWork(worktree.directory, "Fix the login page", {
      author: { name: "Ada Lovelace", email: "ada@example.com" },
    });
    const outcome = await pushSessionBranch(worktree.directory, worktree.branch);
    expect(outcome).toEqual({ branch: worktree.branch, commit, pushed: true });
    expect(runGit(remote.bare, "rev-parse", worktree.branch).trim()).toBe(commit);
    expect(runGit(remote.bare, "log", "-1", "--format=%an <%ae>", worktree.branch).trim()).toBe(
      "Ada Lovelace <ada@example.com>",
    );
    expect(existsSync(marker)).toBe(false);
  });

  it("reports a branch moved on origin as not a fast-forward, and leaves it", async () => {
    const { remote, worktree } = await sessionWorktree();
    await writeFile(path.join(worktree.directory, "a.txt"), "one\n");
    await commitSessionWork(worktree.directory, "One");
    await pushSessionBranch(worktree.directory, worktree.branch);
    // Someone else pushes to the session's branch on origin.
    const moved = runGit(
      remote.bare,
      "commit-tree",
      "main^{tree}",
      "-p",
      "main",
      "-m",
      "theirs",
    ).trim();
    runGit(remote.bare, "update-ref", `refs/heads/${worktree.branch}`, moved);
    await writeFile(path.join(worktree.directory, "b.txt"), "two\n");
    await commitSessionWork(worktree.directory, "Two");
    const outcome = await pushSessionBranch(worktree.directory, worktree.branch);
    expect(outcome.pushed).toBe(false);
    expect(outcome.error).toBe(
      "origin's branch has commits the session's branch lacks (not a fast-forward)",
    );
    expect(runGit(remote.bare, "rev-parse", worktree.branch).trim()).toBe(moved);
  });

  it("words git's failures without the credential a URL carries", () => {
    expect(
      pushProblem(
        new Error("fatal: Authentication failed for 'https://ada:hunter22@example.com/app.git/'"),
      ),
    ).toBe("authentication failed for origin");
    expect(
      pushProblem(
        new Error(
          "fatal: unable to access 'https://ada:hunter22@example.com/': Could not resolve host",
        ),
      ),
    ).toBe("could not reach origin");
    const other = pushProblem(
      new Error("error: src refspec x at https://ada:hunter22@example.com does not match any"),
    );
    expect(other).not.toContain("hunter22");
    expect(other).toContain("the push to origin failed");
  });

  it("delivers now: commits what is uncommitted and pushes, but not while a turn holds the worktree", async () => {
    const { remote, workspaceRoot, worktree } = await sessionWorktree();
    await writeFile(path.join(worktree.directory, "hand.txt"), "by hand\n");
    const request = { projectSlug: "demo", sessionId: session._id, message: "Hand edits" };
    const turn = await tryLock(worktreeLockFile(workspaceRoot, "demo", session._id), "turn-1");
    await expect(deliverSession(workspaceRoot, request)).rejects.toMatchObject({
      code: "conflict",
    });
    await turn?.release();
    const result = await deliverSession(workspaceRoot, request);
    expect(result).toMatchObject({ branch: worktree.branch, committed: true, pushed: true });
    expect(runGit(remote.bare, "show", `${worktree.branch}:hand.txt`)).toBe("by hand\n");
    await expect(
      deliverSession(workspaceRoot, { ...request, sessionId: "665f1c2e9b1d4a00123456aa" }),
    ).rejects.toMatchObject({ code: "not_found" });
  });

  it("delivers a worktree pruned for idleness: checks its branch out again, then pushes", async () => {
    const { remote, workspaceRoot, clone, worktree } = await sessionWorktree();
    await writeFile(path.join(worktree.directory, "kept.txt"), "kept\n");
    const commit = await commitSessionWork(worktree.directory, "Keep a file");
    runGit(clone, "worktree", "remove", worktree.directory);
    expect(existsSync(worktree.directory)).toBe(false);

    const request = { projectSlug: "demo", sessionId: session._id, message: "Hand edits" };
    const result = await deliverSession(workspaceRoot, request);
    expect(result).toEqual({ branch: worktree.branch, commit, committed: false, pushed: true });
    expect(runGit(remote.bare, "show", `${worktree.branch}:kept.txt`)).toBe("kept\n");
    expect(existsSync(path.join(worktree.directory, "kept.txt"))).toBe(true);
  });
});

import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";
import { snapshotWorkspace } from "@gadget/tools";
import { describe, expect, it } from "vitest";
import { createRemote, runGit } from "../testing/git-fixtures.ts";
import { tryLock } from "./lock.ts";
import { prepareWorkspace } from "./prepare.ts";
import { revertTurn } from "./revert.ts";
import {
  commitSessionWork,
  prepareSessionWorktree,
  readWorktreeRecord,
  touchWorktree,
  worktreeLockFile,
} from "./worktree.ts";

const session = { _id: "665f1c2e9b1d4a0012345678", name: "Tidy up" };
const turnIds = ["665f1c2e9b1d4a0000000001", "665f1c2e9b1d4a0000000002"] as const;

/** A session's worktree on a fresh project, and a way to commit a turn in it as the runner does. */
async function sessionWorktree() {
  const remote = await createRemote({ "README.md": "# Demo\n", "old.txt": "old\n" });
  const workspaceRoot = await makeTempDir("gadget-revert-");
  const prepared = await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
  const { directory } = await prepareSessionWorktree({
    workspaceRoot,
    slug: "demo",
    clone: prepared.directory,
    session,
    branchPrefix: "gadget/",
    defaultBranch: prepared.defaultBranch,
  });
  const turn = (turnId: string, subject: string) =>
    commitSessionWork(directory, `${subject}\n\nGadget-Turn: ${turnId}`);
  const request = (turnId: string) => ({ turnId, sessionId: session._id, projectSlug: "demo" });
  return { workspaceRoot, directory, turn, request };
}

describe("reverting a turn", () => {
  it("brings back what the turn deleted and runs nothing the repository configures", async () => {
    const { workspaceRoot, directory, turn, request } = await sessionWorktree();
    await rm(path.join(directory, "old.txt"));
    await writeFile(path.join(directory, "new.txt"), "new\n");
    await turn(turnIds[0], "Replace the old file");
    // A hook the repository asks for: the drone's git must not run it.
    const hooks = path.join(directory, "hooks");
    await mkdir(hooks);
    await writeFile(path.join(hooks, "post-commit"), `#!/bin/sh\ntouch "${directory}/hooked"\n`);
    await chmod(path.join(hooks, "post-commit"), 0o755);
    runGit(directory, "config", "core.hooksPath", hooks);
    runGit(directory, "add", "hooks");
    runGit(directory, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "hooks");

    const result = await revertTurn(workspaceRoot, request(turnIds[0]));
    expect(result).toMatchObject({ outcome: "reverted", files: ["new.txt", "old.txt"] });
    expect(await readFile(path.join(directory, "old.txt"), "utf8")).toBe("old\n");
    expect(existsSync(path.join(directory, "new.txt"))).toBe(false);
    expect(existsSync(path.join(directory, "hooked"))).toBe(false);
    expect(runGit(directory, "log", "-1", "--format=%B").trim()).toBe(
      `Revert "Replace the old file"\n\nGadget-Turn-Reverted: ${turnIds[0]}`,
    );
    await expect(revertTurn(workspaceRoot, request(turnIds[0]))).rejects.toMatchObject({
      code: "conflict",
      details: { reason: "already_reverted" },
    });
  });

  it("restores the starting snapshot of a turn whose commit failed, committing nothing", async () => {
    const { workspaceRoot, directory, turn, request } = await sessionWorktree();
    await writeFile(path.join(directory, "kept.txt"), "an earlier turn\n");
    await turn(turnIds[0], "An earlier turn");
    const head = runGit(directory, "rev-parse", "HEAD");
    const before = await snapshotWorkspace(directory);
    // The turn's changes, staged by the commit that then failed.
    await writeFile(path.join(directory, "old.txt"), "changed\n");
    await rm(path.join(directory, "README.md"));
    await writeFile(path.join(directory, "added.txt"), "added\n");
    runGit(directory, "add", "--all");
    const record = await readWorktreeRecord(directory);
    await touchWorktree(directory, {
      sessionId: session._id,
      branch: record?.branch ?? "",
      uncommitted: { turnId: turnIds[1], before: before.tree },
    });

    expect(await revertTurn(workspaceRoot, request(turnIds[1]))).toEqual({
      outcome: "restored",
      files: ["README.md", "added.txt", "old.txt"],
    });
    expect(await readFile(path.join(directory, "old.txt"), "utf8")).toBe("old\n");
    expect(await readFile(path.join(directory, "README.md"), "utf8")).toBe("# Demo\n");
    expect(existsSync(path.join(directory, "added.txt"))).toBe(false);
    expect(runGit(directory, "status", "--porcelain").trim()).toBe("");
    expect(runGit(directory, "rev-parse", "HEAD")).toBe(head);
    expect((await readWorktreeRecord(directory))?.uncommitted).toBeUndefined();
  });

  it("answers unchanged for a turn without a commit", async () => {
    const { workspaceRoot, request } = await sessionWorktree();
    expect(await revertTurn(workspaceRoot, request(turnIds[1]))).toEqual({ outcome: "unchanged" });
  });

  it("refuses while the session's worktree is locked or holds uncommitted changes", async () => {
    const { workspaceRoot, directory, turn, request } = await sessionWorktree();
    await writeFile(path.join(directory, "a.txt"), "a\n");
    await turn(turnIds[0], "Write a");
    const head = runGit(directory, "rev-parse", "HEAD");

    const lock = await tryLock(worktreeLockFile(workspaceRoot, "demo", session._id), turnIds[1]);
    await expect(revertTurn(workspaceRoot, request(turnIds[0]))).rejects.toMatchObject({
      code: "conflict",
      details: { reason: "turn_running" },
    });
    await lock?.release();

    // What a failed commit left: the revert cannot tell whose it is, so it keeps away.
    await writeFile(path.join(directory, "b.txt"), "b\n");
    await expect(revertTurn(workspaceRoot, request(turnIds[0]))).rejects.toMatchObject({
      code: "conflict",
      details: { reason: "uncommitted_changes" },
    });
    expect(runGit(directory, "rev-parse", "HEAD")).toBe(head);
    expect(await readFile(path.join(directory, "b.txt"), "utf8")).toBe("b\n");
  });

  it("checks a worktree pruned for idleness out again from its branch, then reverts", async () => {
    const { workspaceRoot, directory, turn, request } = await sessionWorktree();
    await writeFile(path.join(directory, "a.txt"), "a\n");
    await turn(turnIds[0], "Write a");
    const clone = path.join(workspaceRoot, "demo");
    runGit(clone, "worktree", "remove", directory);
    expect(existsSync(directory)).toBe(false);

    expect(await revertTurn(workspaceRoot, request(turnIds[0]))).toMatchObject({
      outcome: "reverted",
      files: ["a.txt"],
    });
    expect(existsSync(path.join(directory, "README.md"))).toBe(true);
    expect(existsSync(path.join(directory, "a.txt"))).toBe(false);
  });

  it("says when this drone does not hold the session's worktree", async () => {
    const workspaceRoot = await makeTempDir("gadget-revert-");
    await expect(
      revertTurn(workspaceRoot, {
        turnId: turnIds[0],
        sessionId: session._id,
        projectSlug: "demo",
      }),
    ).rejects.toMatchObject({ code: "not_found", details: { reason: "no_worktree" } });
  });
});

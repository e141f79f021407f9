import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { createRemote, runGit } from "../testing/git-fixtures.ts";
import { tryLock } from "./lock.ts";
import { prepareWorkspace } from "./prepare.ts";
import { pruneIdleWorktrees } from "./prune.ts";
import {
  cloneLockFile,
  commitSessionWork,
  prepareSessionWorktree,
  touchWorktree,
  worktreeDirectory,
  worktreeLockFile,
} from "./worktree.ts";
import { describeSessionWorktree } from "./worktree-state.ts";

const first = { _id: "665f1c2e9b1d4a0012345678", name: "Fix the login page" };
const second = { _id: "665f1c2e9b1d4a00123456aa", name: "Add a footer" };

async function project(files: Record<string, string> = { "README.md": "# Demo\n" }) {
  const remote = await createRemote(files);
  const workspaceRoot = await makeTempDir("gadget-ws-");
  const prepared = await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
  const worktree = (session: { _id: string; name: string }, branchPrefix = "gadget/") =>
    prepareSessionWorktree({
      workspaceRoot,
      slug: "demo",
      clone: prepared.directory,
      session,
      branchPrefix,
      defaultBranch: prepared.defaultBranch,
    });
  return { remote, workspaceRoot, clone: prepared.directory, worktree };
}

/** Files changed on `branch` since it left main. */
function changedOn(clone: string, branch: string): string[] {
  return runGit(clone, "diff", "--name-only", `main...${branch}`)
    .trim()
    .split("\n")
    .filter(Boolean);
}

describe("session worktrees", () => {
  it("gives each session its own worktree and branch from the default branch, sharing one clone", async () => {
    const { remote, clone, worktree } = await project();
    await remote.commit("news.txt", "fetched before the session started\n");
    await prepareWorkspace({
      workspaceRoot: path.dirname(clone),
      slug: "demo",
      gitUrl: remote.bare,
    });

    const one = await worktree(first);
    const two = await worktree(second);
    expect(one).toMatchObject({ outcome: "created", branch: "gadget/fix-the-login-page-665f1c" });
    // The same first six characters and a different name: no clash.
    expect(two).toMatchObject({ outcome: "created", branch: "gadget/add-a-footer-665f1c" });
    expect(one.directory).not.toBe(two.directory);
    expect(await readFile(path.join(one.directory, "news.txt"), "utf8")).toContain("fetched");

    await writeFile(path.join(one.directory, "login.txt"), "fixed\n");
    await writeFile(path.join(two.directory, "footer.txt"), "added\n");
    expect(existsSync(path.join(two.directory, "login.txt"))).toBe(false);
    expect(await commitSessionWork(one.directory, "Fix the login page")).toMatch(/^[0-9a-f]{40}$/);
    expect(await commitSessionWork(two.directory, "Add a footer")).toMatch(/^[0-9a-f]{40}$/);
    expect(await commitSessionWork(two.directory, "Nothing more")).toBeNull();

    expect(changedOn(clone, one.branch)).toEqual(["login.txt"]);
    expect(changedOn(clone, two.branch)).toEqual(["footer.txt"]);
    // The default-branch checkout (the web IDE's files) saw none of it; one .git holds it all.
    expect(existsSync(path.join(clone, "login.txt"))).toBe(false);
    expect(runGit(clone, "rev-parse", "--abbrev-ref", "HEAD").trim()).toBe("main");
    expect(runGit(one.directory, "rev-parse", "--git-common-dir").trim()).toBe(
      path.join(clone, ".git"),
    );
  });

  it("continues a session's work on its branch: the same worktree, or its branch again after a prune", async () => {
    const { workspaceRoot, clone, worktree } = await project();
    const made = await worktree(first);
    await writeFile(path.join(made.directory, "step-1.txt"), "one\n");
    await commitSessionWork(made.directory, "Step one");
    await writeFile(path.join(made.directory, "draft.txt"), "not committed yet\n");

    const again = await worktree(first);
    expect(again).toMatchObject({ outcome: "reused", directory: made.directory });
    expect(await readFile(path.join(again.directory, "draft.txt"), "utf8")).toContain("not");
    await commitSessionWork(again.directory, "Draft");

    await touchWorktree(made.directory, { sessionId: first._id, branch: made.branch });
    const pruned = await pruneIdleWorktrees({ workspaceRoot, retentionMs: -1 });
    expect(pruned.removed).toEqual([made.directory]);
    expect(existsSync(made.directory)).toBe(false);

    // A new prefix applies to new sessions; this one keeps its branch.
    const restored = await worktree(first, "other/");
    expect(restored).toMatchObject({ outcome: "restored", branch: made.branch });
    expect(await readFile(path.join(restored.directory, "step-1.txt"), "utf8")).toBe("one\n");
    expect(changedOn(clone, made.branch)).toEqual(["draft.txt", "step-1.txt"]);

    // Deleted by hand, git still has it registered: the next turn checks the branch out again.
    await rm(restored.directory, { recursive: true, force: true });
    expect(await worktree(first)).toMatchObject({ outcome: "restored", branch: made.branch });
    expect(await readFile(path.join(restored.directory, "step-1.txt"), "utf8")).toBe("one\n");
  });

  it("goes on from the session's branch another drone pushed, on a drone that never held it", async () => {
    const { remote, clone, worktree } = await project();
    const made = await worktree(first);
    await writeFile(path.join(made.directory, "login.txt"), "fixed on the laptop\n");
    const commit = await commitSessionWork(made.directory, "Fix the login page");
    runGit(made.directory, "push", "origin", `${made.branch}:${made.branch}`);

    // A second drone: its own workspace, its own clone of the same origin.
    const elsewhere = await makeTempDir("gadget-ws-");
    const prepared = await prepareWorkspace({
      workspaceRoot: elsewhere,
      slug: "demo",
      gitUrl: remote.bare,
    });
    const continued = await prepareSessionWorktree({
      workspaceRoot: elsewhere,
      slug: "demo",
      clone: prepared.directory,
      session: first,
      branchPrefix: "gadget/",
      defaultBranch: prepared.defaultBranch,
    });
    expect(continued).toMatchObject({ outcome: "restored", branch: made.branch });
    expect(continued.message).toBe(`Continuing on branch ${made.branch} as pushed to origin`);
    expect(runGit(continued.directory, "rev-parse", "HEAD").trim()).toBe(commit);
    expect(await readFile(path.join(continued.directory, "login.txt"), "utf8")).toBe(
      "fixed on the laptop\n",
    );
    // The other session of the project still starts from the default branch there.
    const other = await prepareSessionWorktree({
      workspaceRoot: elsewhere,
      slug: "demo",
      clone: prepared.directory,
      session: second,
      branchPrefix: "gadget/",
      defaultBranch: prepared.defaultBranch,
    });
    expect(other.outcome).toBe("created");
    expect(changedOn(clone, made.branch)).toEqual(["login.txt"]);
  });

  it("starts a fork's branch at its source's commit, and says so when the clone lacks that commit", async () => {
    const { remote, workspaceRoot, clone, worktree } = await project();
    const source = await worktree(first);
    await writeFile(path.join(source.directory, "login.txt"), "fixed\n");
    const commit = (await commitSessionWork(source.directory, "Fix the login page")) as string;
    const fork = { _id: "665f1c2e9b1d4a00123456bb", name: "Try another way" };
    const forkOn = (root: string, forkClone: string) =>
      prepareSessionWorktree({
        workspaceRoot: root,
        slug: "demo",
        clone: forkClone,
        session: fork,
        branchPrefix: "gadget/",
        defaultBranch: "main",
        startFrom: commit,
      });
    const here = await forkOn(workspaceRoot, clone);
    expect(here).toMatchObject({
      outcome: "created",
      message: `New branch ${here.branch} from commit ${commit.slice(0, 7)}`,
    });
    expect(runGit(here.directory, "rev-parse", "HEAD").trim()).toBe(commit);

    // Another drone's clone: the source's branch was never pushed.
    const elsewhere = await makeTempDir("gadget-ws-");
    const prepared = await prepareWorkspace({
      workspaceRoot: elsewhere,
      slug: "demo",
      gitUrl: remote.bare,
    });
    const there = await forkOn(elsewhere, prepared.directory);
    expect(there.outcome).toBe("created");
    expect(there.message).toBe(
      `New branch ${there.branch} from main: the fork's commit ${commit.slice(0, 7)} is not in this drone's clone nor on the project's remote`,
    );
    expect(existsSync(path.join(there.directory, "login.txt"))).toBe(false);
  });

  it("says where a session's worktree stands: ahead, behind, dirty, also once pruned", async () => {
    const { remote, workspaceRoot, clone, worktree } = await project();
    const made = await worktree(first);
    const request = { projectSlug: "demo", sessionId: first._id };
    expect(await describeSessionWorktree(workspaceRoot, request)).toMatchObject({
      branch: made.branch,
      base: "origin/main",
      ahead: 0,
      behind: 0,
      dirty: false,
    });
    await writeFile(path.join(made.directory, "a.txt"), "a\n");
    const commit = await commitSessionWork(made.directory, "Write a");
    await writeFile(path.join(made.directory, "by-hand.txt"), "typed in the editor\n");
    await remote.commit("news.txt", "someone else's work\n");
    await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
    expect(await describeSessionWorktree(workspaceRoot, request)).toEqual({
      branch: made.branch,
      head: commit,
      base: "origin/main",
      ahead: 1,
      behind: 1,
      dirty: true,
    });
    await rm(path.join(made.directory, "by-hand.txt"));
    runGit(clone, "worktree", "remove", made.directory);
    expect(await describeSessionWorktree(workspaceRoot, request)).toMatchObject({
      head: commit,
      ahead: 1,
      behind: 1,
      dirty: false,
    });
    await expect(
      describeSessionWorktree(workspaceRoot, { ...request, sessionId: second._id }),
    ).rejects.toMatchObject({ code: "not_found", details: { reason: "no_worktree" } });
  });

  it("is never held by a named pipe under a git control file's name: it is removed and the state answered", async () => {
    const { workspaceRoot, worktree } = await project();
    const made = await worktree(first);
    await mkdir(path.join(made.directory, "sub"));
    execFileSync("mkfifo", [path.join(made.directory, "sub", ".gitignore")]);
    const state = await describeSessionWorktree(workspaceRoot, {
      projectSlug: "demo",
      sessionId: first._id,
    });
    expect(state).toMatchObject({ branch: made.branch, dirty: false });
    expect(existsSync(path.join(made.directory, "sub", ".gitignore"))).toBe(false);
    // The stopped status left no lock behind: the next commit goes through.
    await writeFile(path.join(made.directory, "sub", "after.txt"), "after\n");
    expect(await commitSessionWork(made.directory, "After the pipe")).toMatch(/^[0-9a-f]{40}$/);
  }, 30_000);

  it("sets aside a worktree whose clone was deleted, and starts the session again from the new clone", async () => {
    const { remote, workspaceRoot, clone, worktree } = await project();
    const made = await worktree(first);
    await writeFile(path.join(made.directory, "unsaved.txt"), "only here\n");
    await rm(clone, { recursive: true, force: true });
    const recloned = await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
    expect(recloned.outcome).toBe("cloned");

    const again = await worktree(first);
    expect(again).toMatchObject({ outcome: "created", directory: made.directory });
    expect(runGit(again.directory, "status", "--short")).toBe("");
    const orphaned = path.join(workspaceRoot, ".worktrees", ".orphaned");
    const [aside] = await readdir(orphaned);
    expect(await readFile(path.join(orphaned, aside as string, "unsaved.txt"), "utf8")).toBe(
      "only here\n",
    );
    // Pruning leaves what was set aside alone.
    expect((await pruneIdleWorktrees({ workspaceRoot, retentionMs: -1 })).kept).toEqual([]);
    expect(existsSync(path.join(orphaned, aside as string, "unsaved.txt"))).toBe(true);
  });

  it("commits a turn's work as Gadget Code when git knows nobody, and as the user when it does", async () => {
    const { worktree } = await project();
    const made = await worktree(first);
    const saved = { HOME: process.env.HOME, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME };
    process.env.HOME = await makeTempDir("gadget-nobody-");
    process.env.XDG_CONFIG_HOME = "";
    try {
      await writeFile(path.join(made.directory, "a.txt"), "a\n");
      await commitSessionWork(made.directory, "Anonymous");
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(runGit(made.directory, "log", "-1", "--format=%an <%ae>").trim()).toBe(
      "Gadget Code <gadget-drone@localhost>",
    );
    runGit(made.directory, "config", "user.email", "ada@example.test");
    runGit(made.directory, "config", "user.name", "Ada");
    await writeFile(path.join(made.directory, "b.txt"), "b\n");
    await commitSessionWork(made.directory, "Mine");
    expect(runGit(made.directory, "log", "-1", "--format=%an <%ae>").trim()).toBe(
      "Ada <ada@example.test>",
    );
  });

  it("never takes another session's branch when the names clash", async () => {
    const { worktree } = await project();
    const twin = { ...second, name: first.name };
    const one = await worktree(first);
    const two = await worktree(twin);
    expect(one.branch).toBe("gadget/fix-the-login-page-665f1c");
    expect(two.branch).toBe(`gadget/fix-the-login-page-${twin._id}`);
    expect(two.directory).not.toBe(one.directory);
  });
});

describe("pruning idle worktrees", () => {
  it("removes an old idle worktree, keeps its branch, and never touches one a turn holds or a recent one", async () => {
    const { workspaceRoot, clone, worktree } = await project();
    const third = { _id: "665f1c2e9b1d4a00123456bb", name: "Recent" };
    const idle = await worktree(first);
    const held = await worktree(second);
    const recent = await worktree(third);
    await writeFile(path.join(idle.directory, "idle.txt"), "kept on the branch\n");
    await commitSessionWork(idle.directory, "Idle work");
    const longAgo = new Date(Date.now() - 10 * 86_400_000);
    for (const [made, session] of [
      [idle, first],
      [held, second],
      [recent, third],
    ] as const) {
      await touchWorktree(made.directory, { sessionId: session._id, branch: made.branch });
    }
    // Only the record says when a worktree was last used; age two of them by 10 days.
    for (const made of [idle, held]) {
      const file = `${made.directory}.json`;
      const record = JSON.parse(await readFile(file, "utf8"));
      await writeFile(file, JSON.stringify({ ...record, lastUsedAt: longAgo.toISOString() }));
      await utimes(made.directory, longAgo, longAgo);
    }
    const lock = await tryLock(worktreeLockFile(workspaceRoot, "demo", second._id), "turn-1");

    const result = await pruneIdleWorktrees({ workspaceRoot, retentionMs: 7 * 86_400_000 });
    expect(result.removed).toEqual([idle.directory]);
    expect(result.kept).toEqual([{ directory: held.directory, reason: "a turn holds it" }]);
    expect(existsSync(idle.directory)).toBe(false);
    expect(existsSync(path.join(held.directory, "README.md"))).toBe(true);
    expect(existsSync(path.join(recent.directory, "README.md"))).toBe(true);
    expect(runGit(clone, "branch", "--list", idle.branch).trim()).toContain(idle.branch);
    expect(runGit(clone, "worktree", "list")).not.toContain(idle.directory);
    expect(changedOn(clone, idle.branch)).toEqual(["idle.txt"]);
    await lock?.release();
    expect(worktreeDirectory(workspaceRoot, "demo", first._id)).toBe(idle.directory);
  });

  it("leaves a project alone while a turn fetches its clone or adds a worktree to it", async () => {
    const { workspaceRoot, worktree } = await project();
    const idle = await worktree(first);
    const fetching = await tryLock(cloneLockFile(workspaceRoot, "demo"), "turn-1");
    expect((await pruneIdleWorktrees({ workspaceRoot, retentionMs: -1 })).removed).toEqual([]);
    expect(existsSync(idle.directory)).toBe(true);
    await fetching?.release();
    expect((await pruneIdleWorktrees({ workspaceRoot, retentionMs: -1 })).removed).toEqual([
      idle.directory,
    ]);
  });
});

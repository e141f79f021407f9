// Staging a worktree the model wrote, with real git: a nested repository is never recorded as a
// gitlink (nor entered), a path git refuses leaves only itself out, a named pipe under a git
// control file's name is removed before git could block on it.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { changesSince, snapshotWorkspace } from "./changes.ts";
import { defuseGitControlFiles } from "./git-control-files.ts";
import { describeLeftOut, stageAll } from "./staging.ts";
import { makeWorkspace, type TestWorkspace } from "./test-support.ts";

const identity = ["-c", "user.name=t", "-c", "user.email=t@t"];

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", [...identity, ...args], { cwd, encoding: "utf8" });
}

let workspace: TestWorkspace;
let markers: string;

beforeEach(async () => {
  workspace = await makeWorkspace({ "README.md": "# w\n" });
  markers = workspace.outside;
  git(workspace.root, "init", "-q");
  git(workspace.root, "add", "-A");
  git(workspace.root, "commit", "-qm", "initial");
});

afterEach(async () => {
  await workspace.cleanup();
});

/** A nested repository whose own config would run `touch <marker>` for every file git cleans. */
async function plantNested(directory: string): Promise<void> {
  const nested = path.join(workspace.root, directory);
  await mkdir(nested, { recursive: true });
  git(nested, "init", "-q");
  await writeFile(path.join(nested, "f.txt"), "hi\n");
  git(nested, "add", "f.txt");
  git(nested, "commit", "-qm", "nested");
  await writeFile(path.join(nested, ".gitattributes"), "* filter=x\n");
  git(nested, "config", "filter.x.clean", `sh -c 'touch ${path.join(markers, "ran")}; cat'`);
  // Same bytes, newer: git would pass the file through the filter again.
  await writeFile(path.join(nested, "f.txt"), "hi\n");
}

describe("stageAll", () => {
  it("leaves a nested repository out of the index and never runs its filter", async () => {
    await plantNested("vendor/v");
    await writeFile(path.join(workspace.root, "a.txt"), "a\n");
    const staged = await stageAll({ cwd: workspace.root }, "HEAD");
    expect(staged).toEqual({
      changed: true,
      leftOut: [{ path: "vendor/v", reason: "nested_repository" }],
    });
    expect(git(workspace.root, "ls-files", "-s")).not.toMatch(/^160000/m);
    git(workspace.root, "commit", "-qm", "turn");
    // What the drone's git runs next on this worktree (status, as the session page asks).
    execFileSync("git", ["-c", "diff.ignoreSubmodules=all", "status", "--porcelain"], {
      cwd: workspace.root,
    });
    expect(await readdir(markers)).not.toContain("ran");
    expect(describeLeftOut(staged.leftOut)).toMatch(
      /vendor\/v holds a git repository of its own \(a \.git\), which the drone never commits/,
    );
  });

  it("changes nothing when only a nested repository is new", async () => {
    await plantNested("n");
    expect((await stageAll({ cwd: workspace.root }, "HEAD")).changed).toBe(false);
  });

  it("keeps going past a path git refuses, and names it", async () => {
    await mkdir(path.join(workspace.root, ".GIT"));
    await writeFile(path.join(workspace.root, ".GIT", "config"), "[core]\n");
    await writeFile(path.join(workspace.root, "b.txt"), "b\n");
    const staged = await stageAll({ cwd: workspace.root }, "HEAD");
    expect(staged.changed).toBe(true);
    expect(staged.leftOut).toEqual([{ path: ".GIT/config", reason: "refused_path" }]);
    expect(git(workspace.root, "ls-files")).toContain("b.txt");
  });

  it("takes a .git file pointing elsewhere for a nested repository, never committing it", async () => {
    const elsewhere = path.join(workspace.outside, "elsewhere");
    await mkdir(elsewhere);
    git(elsewhere, "init", "-q");
    git(elsewhere, "commit", "-q", "--allow-empty", "-m", "host");
    await mkdir(path.join(workspace.root, "w"));
    await writeFile(path.join(workspace.root, "w", ".git"), `gitdir: ${elsewhere}/.git\n`);
    const staged = await stageAll({ cwd: workspace.root }, "HEAD");
    expect(staged.leftOut).toEqual([{ path: "w", reason: "nested_repository" }]);
    expect(git(workspace.root, "ls-files")).toBe("README.md\n");
  });
});

describe("named pipes under git's names", () => {
  it("are removed before git walks the tree, so git never waits on one", async () => {
    await mkdir(path.join(workspace.root, "sub"));
    for (const fifo of [".gitignore", "sub/.gitattributes", "plain-pipe"]) {
      spawnSync("mkfifo", [path.join(workspace.root, fifo)]);
    }
    expect(await defuseGitControlFiles(workspace.root)).toEqual(
      expect.arrayContaining([".gitignore", "sub/.gitattributes"]),
    );
    // A pipe under another name stays: git skips it.
    expect(existsSync(path.join(workspace.root, "plain-pipe"))).toBe(true);
    spawnSync("mkfifo", [path.join(workspace.root, ".gitignore")]);
    const before = await snapshotWorkspace(workspace.root);
    await writeFile(path.join(workspace.root, "c.txt"), "c\n");
    const changes = await changesSince(workspace.root, before);
    expect(changes.files).toEqual([{ path: "c.txt", status: "added" }]);
    expect(changes.leftOut).toEqual([]);
    expect(existsSync(path.join(workspace.root, ".gitignore"))).toBe(false);
  });
});

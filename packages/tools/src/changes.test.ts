// Changes since a snapshot: added, edited, deleted and renamed files, untracked included, ignored
// excluded, and the user's index, branches and stash list untouched.
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { changesSince, snapshotWorkspace, type WorkspaceSnapshot } from "./changes.ts";
import { git, makeWorkspace, type TestWorkspace } from "./test-support.ts";

let workspace: TestWorkspace;
const paragraph = Array.from(
  { length: 20 },
  (_, index) => `line ${index} of a file that will be renamed`,
).join("\n");

async function put(file: string, content: string) {
  await mkdir(path.dirname(path.join(workspace.root, file)), { recursive: true });
  await writeFile(path.join(workspace.root, file), content);
}

/** The turn's work: one edit, one deletion, one new file, one rename, plus ignored noise. */
async function changeFiles() {
  await put("a.txt", "alpha\nedited\n");
  await rm(path.join(workspace.root, "b.txt"));
  await put("new.txt", "brand new\n");
  await rename(
    path.join(workspace.root, "old-name.txt"),
    path.join(workspace.root, "new-name.txt"),
  );
  await put("ignored/cache.bin", "noise");
  await put("debug.log", "noise");
  await put("node_modules/pkg/index.js", "noise");
}

const expectedFiles = [
  { path: "a.txt", status: "modified" },
  { path: "b.txt", status: "deleted" },
  { path: "new-name.txt", status: "added" },
  { path: "new.txt", status: "added" },
  { path: "old-name.txt", status: "deleted" },
];

/** A JSON round trip, as the drone stores the snapshot with the turn. */
const stored = (snapshot: WorkspaceSnapshot) =>
  JSON.parse(JSON.stringify(snapshot)) as WorkspaceSnapshot;

beforeEach(async () => {
  workspace = await makeWorkspace({
    ".gitignore": "ignored/\n*.log\nnode_modules/\n",
    "a.txt": "alpha\n",
    "b.txt": "beta\n",
    "c.txt": "gamma\n",
    "old-name.txt": `${paragraph}\n`,
  });
});

afterEach(() => workspace.cleanup());

describe("in a git repository", () => {
  beforeEach(() => {
    git(workspace.root, "init", "-q");
    git(workspace.root, "add", "-A");
    git(workspace.root, "commit", "-q", "-m", "initial");
  });

  it("reports added, edited, deleted and renamed files since the snapshot", async () => {
    const snapshot = await snapshotWorkspace(workspace.root);
    expect(snapshot.store).toBe("repository");
    await changeFiles();
    const changes = await changesSince(workspace.root, stored(snapshot));
    expect(changes.files).toEqual(expectedFiles);
    expect(changes.diff).toContain("rename from old-name.txt");
    expect(changes.diff).toContain("rename to new-name.txt");
    expect(changes.diff).toContain("+edited");
    expect(changes.diff).toContain("deleted file mode");
    expect(changes.diff).toContain("+brand new");
    expect(changes.diff).not.toMatch(/debug\.log|cache\.bin|node_modules/);
    expect(changes.truncated).toBe(false);
  });

  it("counts only what changed after the snapshot, untracked files included", async () => {
    await put("c.txt", "gamma changed before the turn\n");
    await put("untracked-before.txt", "already here\n");
    const snapshot = await snapshotWorkspace(workspace.root);
    await put("untracked-before.txt", "changed during the turn\n");
    await put("untracked-new.txt", "new during the turn\n");
    const changes = await changesSince(workspace.root, snapshot);
    expect(changes.files).toEqual([
      { path: "untracked-before.txt", status: "modified" },
      { path: "untracked-new.txt", status: "added" },
    ]);
    const again = await changesSince(workspace.root, changes.current);
    expect(again.files).toEqual([]);
    expect(again.diff).toBe("");
  });

  it("leaves the user's index, branches, stash list and staged changes alone", async () => {
    await put("c.txt", "staged change\n");
    git(workspace.root, "add", "c.txt");
    await put("a.txt", "stashed change\n");
    git(workspace.root, "stash", "push", "-q", "--", "a.txt");
    const indexPath = path.join(workspace.root, ".git", "index");
    const fingerprint = async () => ({
      index: createHash("sha256")
        .update(await readFile(indexPath))
        .digest("hex"),
      stash: git(workspace.root, "stash", "list"),
      branches: git(workspace.root, "branch", "-a"),
      staged: git(workspace.root, "diff", "--cached", "--name-status"),
      head: git(workspace.root, "rev-parse", "HEAD"),
    });
    const before = await fingerprint();
    const snapshot = await snapshotWorkspace(workspace.root);
    await changeFiles();
    await changesSince(workspace.root, snapshot);
    expect(await fingerprint()).toEqual(before);
    expect(git(workspace.root, "status", "--porcelain")).toContain("M  c.txt");
  });

  it("cuts a large diff and says so", async () => {
    const snapshot = await snapshotWorkspace(workspace.root);
    await put("large.txt", `${"0123456789".repeat(10_000)}\n`);
    const changes = await changesSince(workspace.root, snapshot, { maxDiffBytes: 2_000 });
    expect(changes.truncated).toBe(true);
    expect(Buffer.byteLength(changes.diff)).toBeLessThanOrEqual(2_000);
    expect(changes.files).toEqual([{ path: "large.txt", status: "added" }]);
  });
});

describe("in a directory that is not a git repository", () => {
  it("keeps snapshots in a private store and never creates .git in the workspace", async () => {
    const storeDirectory = path.join(workspace.outside, "snapshots");
    const snapshot = await snapshotWorkspace(workspace.root, { storeDirectory });
    expect(snapshot.store).toBe("private");
    expect(snapshot.gitDir?.startsWith(storeDirectory)).toBe(true);
    await changeFiles();
    const changes = await changesSince(workspace.root, stored(snapshot), { storeDirectory });
    expect(changes.files).toEqual(expectedFiles);
    expect(changes.diff).toContain("rename from old-name.txt");
    await expect(stat(path.join(workspace.root, ".git"))).rejects.toThrow();
  });
});

describe("a same-size edit right after a fresh clone", () => {
  it("is always reported (git's racy-entry check survives the snapshot's index copy)", async () => {
    const { execFileSync } = await import("node:child_process");
    const { mkdtemp } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const base = await mkdtemp(path.join(tmpdir(), "gadget-racy-"));
    const seed = path.join(base, "seed");
    const run = (cwd: string, ...args: string[]) =>
      execFileSync("git", args, {
        cwd,
        stdio: "ignore",
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: "t",
          GIT_AUTHOR_EMAIL: "t@t",
          GIT_COMMITTER_NAME: "t",
          GIT_COMMITTER_EMAIL: "t@t",
        },
      });
    await mkdir(seed);
    run(seed, "init", "-q", "--initial-branch=main");
    await writeFile(path.join(seed, "lib.js"), "return a - b;\n");
    run(seed, "add", "-A");
    run(seed, "commit", "-qm", "initial");
    run(base, "clone", "-q", "--bare", seed, "bare.git");
    try {
      let missed = 0;
      // Each round: clone, snapshot and edit within milliseconds, as a drone's turn does.
      for (let round = 0; round < 30; round++) {
        const checkout = path.join(base, `checkout-${round}`);
        run(base, "clone", "-q", "bare.git", checkout);
        const before = await snapshotWorkspace(checkout);
        await writeFile(path.join(checkout, "lib.js"), "return a + b;\n");
        const changes = await changesSince(checkout, before);
        if (changes.files.length !== 1) missed++;
      }
      expect(missed).toBe(0);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
    // Thirty clones and snapshots: on a busy machine that takes more than the default 30 s.
  }, 180_000);
});

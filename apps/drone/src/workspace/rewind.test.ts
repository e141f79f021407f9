// Rewinding a session's worktree on the drone: what the reset removes (files the turns added,
// untracked folders the user left) and what it keeps (ignored files, everything under the backup
// ref), including when an ignored file stands where the target has a tracked one.
import { existsSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { createRemote, runGit } from "../testing/git-fixtures.ts";
import { prepareWorkspace } from "./prepare.ts";
import { rewindSession } from "./rewind.ts";
import { commitSessionWork, prepareSessionWorktree } from "./worktree.ts";

const session = { _id: "665f1c2e9b1d4a0012345679", name: "Rewind me" };
const turnIds = ["665f1c2e9b1d4a0000000011", "665f1c2e9b1d4a0000000012"] as const;

async function sessionWorktree() {
  const remote = await createRemote({ "README.md": "# Demo\n", ".gitignore": "*.log\n" });
  const workspaceRoot = await makeTempDir("gadget-rewind-");
  const prepared = await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
  const { directory } = await prepareSessionWorktree({
    workspaceRoot,
    slug: "demo",
    clone: prepared.directory,
    session,
    branchPrefix: "gadget/",
    defaultBranch: prepared.defaultBranch,
  });
  const turn = (turnId: string) => commitSessionWork(directory, `Turn\n\nGadget-Turn: ${turnId}`);
  const rewind = () =>
    rewindSession(workspaceRoot, {
      sessionId: session._id,
      projectSlug: "demo",
      turnIds: [turnIds[1]],
      deliver: false,
    });
  return { directory, turn, rewind };
}

const files = (directory: string, ref: string) =>
  runGit(directory, "ls-tree", "-r", "--name-only", ref).trim().split("\n");

describe("rewinding a session's worktree", () => {
  it("removes what the turn and the user added, keeps ignored files, and keeps it all under the ref", async () => {
    const { directory, turn, rewind } = await sessionWorktree();
    await writeFile(path.join(directory, "first.txt"), "first\n");
    const first = await turn(turnIds[0]);
    await writeFile(path.join(directory, "second.txt"), "second\n");
    await writeFile(path.join(directory, "README.md"), "# Changed\n");
    await turn(turnIds[1]);
    await mkdir(path.join(directory, "notes", "deep"), { recursive: true });
    await writeFile(path.join(directory, "notes", "deep", "todo.md"), "by hand\n");
    await writeFile(path.join(directory, "build.log"), "ignored\n");

    const result = await rewind();
    expect(result.head).toBe(first);
    expect(runGit(directory, "rev-parse", "HEAD").trim()).toBe(first);
    expect(existsSync(path.join(directory, "second.txt"))).toBe(false);
    expect(existsSync(path.join(directory, "notes"))).toBe(false);
    expect(await readFile(path.join(directory, "README.md"), "utf8")).toBe("# Demo\n");
    expect(await readFile(path.join(directory, "build.log"), "utf8")).toBe("ignored\n");
    expect(runGit(directory, "status", "--porcelain").trim()).toBe("");
    expect(files(directory, result.backupRef)).toEqual(
      expect.arrayContaining(["second.txt", "notes/deep/todo.md", "README.md"]),
    );
    expect(files(directory, result.backupRef)).not.toContain("build.log");
    expect(runGit(directory, "rev-parse", `${result.backupRef}^`).trim()).toBe(result.previousHead);
  });

  it("goes back over an ignored file that stands where the target has a tracked one", async () => {
    const { directory, turn, rewind } = await sessionWorktree();
    await writeFile(path.join(directory, "trace.txt"), "tracked before\n");
    const first = await turn(turnIds[0]);
    // The second turn stops tracking it and ignores it; a file of that name is written again.
    await rm(path.join(directory, "trace.txt"));
    await writeFile(path.join(directory, ".gitignore"), "*.log\ntrace.txt\n");
    await turn(turnIds[1]);
    await writeFile(path.join(directory, "trace.txt"), "ignored now\n");

    const result = await rewind();
    expect(result.head).toBe(first);
    expect(await readFile(path.join(directory, "trace.txt"), "utf8")).toBe("tracked before\n");
    expect(runGit(directory, "status", "--porcelain").trim()).toBe("");
  });
});

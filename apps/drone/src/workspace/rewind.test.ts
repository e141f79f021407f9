// Rewinding a session's worktree on the drone: what the reset removes (files the turns added,
// untracked folders the user left) and what it keeps (ignored files, everything under the backup
// ref), including when an ignored file stands where the target has a tracked one, a worktree as
// the last turn left it (no commit made for it), every kind of change made by hand after the last
// turn (the ones only a scan finds: a file the rewound turns never touched, a deletion, something
// staged, a file become a folder, awkward names), a change only staged before the rewind, and a
// nested repository (left where it is).
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

  it("keeps a worktree as the last turn left it under a ref at the old head, making no commit", async () => {
    const { directory, turn, rewind } = await sessionWorktree();
    await writeFile(path.join(directory, "first.txt"), "first\n");
    const first = await turn(turnIds[0]);
    await writeFile(path.join(directory, "second.txt"), "second\n");
    const second = await turn(turnIds[1]);

    const result = await rewind();
    expect(result).toMatchObject({ previousHead: second, head: first });
    expect(runGit(directory, "rev-parse", result.backupRef).trim()).toBe(second);
    expect(existsSync(path.join(directory, "second.txt"))).toBe(false);
    expect(runGit(directory, "status", "--porcelain").trim()).toBe("");
  });

  it("keeps every change made by hand after the last turn, however the worktree holds it", async () => {
    const { directory, turn, rewind } = await sessionWorktree();
    await writeFile(path.join(directory, "first.txt"), "first\n");
    await writeFile(path.join(directory, "folder"), "a file for now\n");
    const first = await turn(turnIds[0]);
    await writeFile(path.join(directory, "second.txt"), "second\n");
    await turn(turnIds[1]);
    // By hand: a file the rewound turn never touched, a deletion, a staged file, a file become a
    // folder, and names git quotes or a command line could take for an option.
    await writeFile(path.join(directory, "first.txt"), "changed by hand\n");
    await rm(path.join(directory, "README.md"));
    await writeFile(path.join(directory, "staged.txt"), "staged\n");
    runGit(directory, "add", "staged.txt");
    await rm(path.join(directory, "folder"));
    await mkdir(path.join(directory, "folder"));
    await writeFile(path.join(directory, "folder", "inside.txt"), "inside\n");
    await writeFile(path.join(directory, "-n"), "dash\n");
    await writeFile(path.join(directory, 'notes on "ünïcode" .md'), "quoted\n");

    const result = await rewind();
    expect(result.head).toBe(first);
    expect(await readFile(path.join(directory, "first.txt"), "utf8")).toBe("first\n");
    expect(await readFile(path.join(directory, "README.md"), "utf8")).toBe("# Demo\n");
    expect(await readFile(path.join(directory, "folder"), "utf8")).toBe("a file for now\n");
    for (const gone of ["second.txt", "staged.txt", "-n", 'notes on "ünïcode" .md']) {
      expect(existsSync(path.join(directory, gone))).toBe(false);
    }
    expect(runGit(directory, "status", "--porcelain").trim()).toBe("");
    const kept = files(directory, result.backupRef);
    expect(kept).toEqual(
      expect.arrayContaining(["first.txt", "second.txt", "staged.txt", "folder/inside.txt", "-n"]),
    );
    expect(kept).not.toContain("README.md");
    expect(kept).not.toContain("folder");
    expect(runGit(directory, "show", `${result.backupRef}:first.txt`)).toBe("changed by hand\n");
    expect(runGit(directory, "show", `${result.backupRef}:notes on "ünïcode" .md`)).toBe(
      "quoted\n",
    );
    // And it all comes back.
    runGit(directory, "checkout", "--quiet", result.backupRef);
    expect(await readFile(path.join(directory, "first.txt"), "utf8")).toBe("changed by hand\n");
    expect(await readFile(path.join(directory, "folder", "inside.txt"), "utf8")).toBe("inside\n");
  });

  it("keeps a change that is only staged (what a failed commit leaves), nothing else changed", async () => {
    const { directory, turn, rewind } = await sessionWorktree();
    await writeFile(path.join(directory, "first.txt"), "first\n");
    const first = await turn(turnIds[0]);
    await writeFile(path.join(directory, "second.txt"), "second\n");
    await turn(turnIds[1]);
    // Staged already, so the rewind's own `add -A` stages nothing: only the index says it.
    await writeFile(path.join(directory, "first.txt"), "staged by hand\n");
    runGit(directory, "add", "first.txt");

    const result = await rewind();
    expect(result.head).toBe(first);
    expect(await readFile(path.join(directory, "first.txt"), "utf8")).toBe("first\n");
    expect(runGit(directory, "status", "--porcelain").trim()).toBe("");
    expect(runGit(directory, "show", `${result.backupRef}:first.txt`)).toBe("staged by hand\n");
    expect(runGit(directory, "show", `${result.backupRef}:second.txt`)).toBe("second\n");
  });

  it("leaves a nested repository where it is, its files untouched", async () => {
    const { directory, turn, rewind } = await sessionWorktree();
    await writeFile(path.join(directory, "first.txt"), "first\n");
    const first = await turn(turnIds[0]);
    await writeFile(path.join(directory, "second.txt"), "second\n");
    await turn(turnIds[1]);
    const nested = path.join(directory, "vendor", "lib");
    await mkdir(nested, { recursive: true });
    runGit(nested, "init", "--quiet");
    await writeFile(path.join(nested, "code.c"), "int main;\n");

    const result = await rewind();
    expect(result.head).toBe(first);
    expect(existsSync(path.join(directory, "second.txt"))).toBe(false);
    expect(await readFile(path.join(nested, "code.c"), "utf8")).toBe("int main;\n");
  });
});

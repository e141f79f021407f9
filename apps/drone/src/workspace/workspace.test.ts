import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { makeTempDir, startGitHttpServer } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { ownIdentity, processIdentity } from "../process-identity.ts";
import { createRemote } from "../testing/git-fixtures.ts";
import { acquireLock, lockOwner, tryLock } from "./lock.ts";
import { prepareWorkspace } from "./prepare.ts";

describe("prepareWorkspace", () => {
  it("clones a missing project, reporting progress", async () => {
    const remote = await createRemote({ "README.md": "# Demo\n" });
    const workspaceRoot = await makeTempDir("gadget-ws-");
    const stages: string[] = [];
    const prepared = await prepareWorkspace({
      workspaceRoot,
      slug: "demo",
      gitUrl: remote.bare,
      onProgress: ({ stage }) => stages.push(stage),
    });
    expect(prepared.outcome).toBe("cloned");
    expect(prepared.branch).toBe("main");
    expect(await readFile(path.join(workspaceRoot, "demo", "README.md"), "utf8")).toBe("# Demo\n");
  });

  it("fast-forwards the default branch and keeps the user's uncommitted edits", async () => {
    const remote = await createRemote({ "a.txt": "one\n", "b.txt": "bee\n" });
    const workspaceRoot = await makeTempDir("gadget-ws-");
    await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
    const checkout = path.join(workspaceRoot, "demo");
    await writeFile(path.join(checkout, "b.txt"), "hand edit\n");
    await remote.commit("a.txt", "two\n");

    const prepared = await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
    expect(prepared.outcome).toBe("fast-forwarded");
    expect(await readFile(path.join(checkout, "a.txt"), "utf8")).toBe("two\n");
    expect(await readFile(path.join(checkout, "b.txt"), "utf8")).toBe("hand edit\n");

    const again = await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
    expect(again.outcome).toBe("up-to-date");
  });

  it("fetches and fast-forwards a hostile checkout without running anything it configured", async () => {
    const remote = await createRemote({ "a.txt": "one\n" });
    const workspaceRoot = await makeTempDir("gadget-ws-");
    await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
    const checkout = path.join(workspaceRoot, "demo");
    const markers = await makeTempDir("gadget-markers-");
    const touch = (name: string) => `touch ${path.join(markers, name)}`;
    for (const hook of ["post-merge", "reference-transaction", "post-checkout"]) {
      await writeFile(path.join(checkout, ".git", "hooks", hook), `#!/bin/sh\n${touch(hook)}\n`, {
        mode: 0o755,
      });
    }
    const config = [
      `[core]\n\tfsmonitor = "${touch("fsmonitor")}; echo"\n\tsshCommand = "${touch("ssh")}"`,
      `[remote "origin"]\n\tuploadpack = "${touch("upload-pack")}; git-upload-pack"`,
      `[credential]\n\thelper = "!${touch("credential")}"`,
    ].join("\n");
    await writeFile(path.join(checkout, ".git", "config"), `\n${config}\n`, { flag: "a" });
    await remote.commit("a.txt", "two\n");

    const prepared = await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
    expect(prepared.outcome, prepared.message).toBe("fast-forwarded");
    expect(await readFile(path.join(checkout, "a.txt"), "utf8")).toBe("two\n");
    expect(await readdir(markers)).toEqual([]);
  });

  it("does not fast-forward over an uncommitted edit to a file the remote changed", async () => {
    const remote = await createRemote({ "a.txt": "one\n" });
    const workspaceRoot = await makeTempDir("gadget-ws-");
    await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
    const checkout = path.join(workspaceRoot, "demo");
    await writeFile(path.join(checkout, "a.txt"), "my local work\n");
    await remote.commit("a.txt", "their change\n");

    const prepared = await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl: remote.bare });
    expect(prepared.outcome).toBe("kept-local");
    expect(prepared.message).toMatch(/lose local work/);
    expect(await readFile(path.join(checkout, "a.txt"), "utf8")).toBe("my local work\n");
  });

  it("says clearly when the git URL cannot be cloned", async () => {
    const workspaceRoot = await makeTempDir("gadget-ws-");
    await expect(
      prepareWorkspace({
        workspaceRoot,
        slug: "nope",
        gitUrl: path.join(workspaceRoot, "missing.git"),
      }),
    ).rejects.toMatchObject({
      code: "clone_failed",
      message: expect.stringContaining("Could not clone"),
    });
    expect(existsSync(path.join(workspaceRoot, "nope", ".git"))).toBe(false);
  });

  it("keeps git's cause of a failed clone, not only its opening line", async () => {
    const workspaceRoot = await makeTempDir("gadget-ws-");
    const missing = path.join(workspaceRoot, "missing.git");
    const failure = await prepareWorkspace({ workspaceRoot, slug: "nope", gitUrl: missing }).catch(
      (error: Error) => error,
    );
    expect((failure as Error).message).toMatch(/does not exist/);
    expect((failure as Error).message).not.toMatch(/Cloning into/);
  });

  it("says why a clone with a wrong password failed, without the password", async () => {
    const remote = await createRemote({ "README.md": "# Demo\n" });
    const server = await startGitHttpServer({
      root: path.dirname(remote.bare),
      accounts: { ada: "right-password" },
    });
    try {
      const workspaceRoot = await makeTempDir("gadget-ws-");
      const gitUrl = `${server.url.replace("://", "://ada:wrong-s3cret@")}/${path.basename(remote.bare)}`;
      const failure = (await prepareWorkspace({ workspaceRoot, slug: "demo", gitUrl }).catch(
        (error: Error) => error,
      )) as Error;
      expect(failure).toMatchObject({ code: "clone_failed" });
      expect(failure.message).toMatch(/Authentication failed/i);
      expect(failure.message).toContain(`${server.url}/${path.basename(remote.bare)}`);
      expect(failure.message).not.toContain("wrong-s3cret");
    } finally {
      await server.close();
    }
  });
});

describe("runtime lock", () => {
  it("is exclusive while its owner lives, and free after release", async () => {
    const file = path.join(await makeTempDir("gadget-lock-"), "demo.lock");
    const first = await tryLock(file, "turn-1");
    expect(first).not.toBeNull();
    expect(await tryLock(file, "turn-2")).toBeNull();
    expect(await lockOwner(file)).toMatchObject({ pid: process.pid, turnId: "turn-1" });
    await first?.release();
    const second = await tryLock(file, "turn-2");
    expect(second).not.toBeNull();
    await second?.release();
  });

  it("reclaims a lock left by a dead process", async () => {
    const file = path.join(await makeTempDir("gadget-lock-"), "demo.lock");
    // PID 2^22+1 is above Linux's pid_max default range, so no process has it.
    await writeFile(file, JSON.stringify({ pid: 4_194_305, turnId: "old", since: "x" }));
    const lock = await tryLock(file, "turn-new");
    expect(lock).not.toBeNull();
    expect(await lockOwner(file)).toMatchObject({ turnId: "turn-new" });
  });

  it("reclaims a lock an earlier life of its own PID left (a drone restarted in its container)", async () => {
    const file = path.join(await makeTempDir("gadget-lock-"), "demo.lock");
    const earlier = { pid: process.pid, turnId: "old", since: "x" };
    // Written by a drone that died: the same PID, another start time (or an older drone's file).
    await writeFile(file, JSON.stringify({ ...earlier, identity: "another-boot:12345" }));
    expect(await lockOwner((await tryLock(file, "turn-new"))?.file ?? "")).toMatchObject({
      turnId: "turn-new",
      identity: await ownIdentity(),
    });
    await rm(file);
    await writeFile(file, JSON.stringify(earlier));
    expect(await tryLock(file, "turn-newer")).not.toBeNull();
  });

  it("reclaims a lock whose PID another process has now, and respects the one that holds it", async () => {
    const file = path.join(await makeTempDir("gadget-lock-"), "demo.lock");
    const other = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      const pid = other.pid as number;
      const identity = await processIdentity(pid);
      expect(identity).toMatch(/^[0-9a-f-]+:\d+$/);
      await writeFile(file, JSON.stringify({ pid, identity, turnId: "held", since: "x" }));
      expect(await tryLock(file, "turn-new")).toBeNull();
      await writeFile(
        file,
        JSON.stringify({ pid, identity: `${identity}0`, turnId: "x", since: "x" }),
      );
      expect(await tryLock(file, "turn-new")).not.toBeNull();
    } finally {
      other.kill("SIGKILL");
    }
  });

  it("waits for the holder, saying who holds it", async () => {
    const file = path.join(await makeTempDir("gadget-lock-"), "demo.lock");
    const holder = await tryLock(file, "turn-1");
    const waitedFor: Array<string | undefined> = [];
    const waiting = acquireLock(file, "turn-2", {
      intervalMs: 20,
      onWait: (owner) => waitedFor.push(owner?.turnId),
    });
    setTimeout(() => void holder?.release(), 100);
    const lock = await waiting;
    expect(waitedFor).toEqual(["turn-1"]);
    expect(await lockOwner(lock.file)).toMatchObject({ turnId: "turn-2" });
  });
});

// Undoing a turn end to end: a real drone reverts a turn's commit on the session's branch, refuses
// a revert that would clash with later turns (leaving the worktree as it was), a second revert,
// a revert while a turn of the session runs, another user's turn, and a revert with the drone gone;
// a turn whose commit failed is restored from its starting snapshot.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ScriptedModel, type ScriptedReply, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { worktreeDirectory } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  startRegisteredDrone,
  turnEvents,
  waitForTurn,
} from "./helpers.ts";

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" });
}

describe("reverting a turn end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess;
  let workspace: string;
  let providerId: string;
  let projectSlug: string;
  let sessionId: string;
  let worktree: string;

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_revert_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "reverts");
    ({ workspace, drone } = await startRegisteredDrone(user, server.url, "undoer"));
    const created = await createProjectSession(user, {
      name: "Undo",
      modelUrl: model.baseUrl,
      files: { "README.md": "# Undo\n", "plan.txt": "one\n" },
    });
    ({ providerId, projectSlug, sessionId } = created);
    worktree = worktreeDirectory(workspace, projectSlug, sessionId);
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  /** Runs a turn that writes `files` and waits for it to complete. */
  async function turnWriting(prompt: string, files: Record<string, string>): Promise<string> {
    const writes = Object.entries(files).map(([file, content]) => ({
      name: "write_file",
      arguments: { path: file, content },
    }));
    model.enqueue(...(writes.length ? [{ toolCalls: writes }] : []), { text: "Done." });
    const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
    expect(created.status).toBe(202);
    const turnId = created.body.turn._id as string;
    const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 60_000);
    expect(turn.status, JSON.stringify(turn)).toBe("completed");
    return turnId;
  }

  const read = (file: string) => readFile(path.join(worktree, file), "utf8");

  it("reverts a turn's commit, records it on the turn, and refuses a second revert", async () => {
    const first = await turnWriting("Write the notes\nwith detail", { "notes.txt": "notes\n" });
    const second = await turnWriting("Write the todo", { "todo.txt": "todo\n" });
    const before = git(worktree, "rev-parse", "HEAD").trim();

    const reverted = await user.post(`/api/turns/${first}/revert`, {});
    expect(reverted.status, JSON.stringify(reverted.body)).toBe(202);
    expect(reverted.body.revert.files).toEqual(["notes.txt"]);
    // The branch is back as before the turn, with the later turn's work kept.
    expect(existsSync(path.join(worktree, "notes.txt"))).toBe(false);
    expect(await read("todo.txt")).toBe("todo\n");
    expect(git(worktree, "rev-parse", "HEAD").trim()).toBe(reverted.body.revert.commit);
    expect(git(worktree, "rev-parse", "HEAD~1").trim()).toBe(before);
    expect(git(worktree, "log", "-1", "--format=%B").trim()).toBe(
      `Revert "Write the notes"\n\nGadget-Turn-Reverted: ${first}`,
    );
    expect(git(worktree, "status", "--porcelain").trim()).toBe("");

    const turn = (await user.get(`/api/turns/${first}`)).body.turn;
    expect(turn.revertCommit).toBe(reverted.body.revert.commit);
    expect(turn.revertedAt).toBeTruthy();
    const listed = (await user.get(`/api/sessions/${sessionId}/turns`)).body.turns;
    expect(listed.find((row: { _id: string }) => row._id === second).revertedAt).toBeNull();

    const again = await user.post(`/api/turns/${first}/revert`, {});
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/already reverted/);
  });

  it("refuses a revert that clashes with a later turn's changes, leaving the worktree as it was", async () => {
    const older = await turnWriting("Plan two", { "plan.txt": "two\n" });
    await turnWriting("Plan three", { "plan.txt": "three\n" });
    const head = git(worktree, "rev-parse", "HEAD").trim();

    const refused = await user.post(`/api/turns/${older}/revert`, {});
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.files).toEqual(["plan.txt"]);
    expect(refused.body.error.message).toContain("plan.txt");
    expect(git(worktree, "rev-parse", "HEAD").trim()).toBe(head);
    expect(git(worktree, "status", "--porcelain").trim()).toBe("");
    expect(await read("plan.txt")).toBe("three\n");
    expect((await user.get(`/api/turns/${older}`)).body.turn.revertedAt).toBeNull();
  });

  it("says a turn that changed nothing has nothing to revert", async () => {
    const idle = await turnWriting("Just look around", {});
    const answer = await user.post(`/api/turns/${idle}/revert`, {});
    expect(answer.status).toBe(200);
    expect(answer.body.revert).toBeNull();
    expect(answer.body.message).toMatch(/changed no files/);
  });

  it("refuses while a turn of the session runs, and another user's turn is not found", async () => {
    const earlier = await turnWriting("Write the list", { "list.txt": "list\n" });
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    model.setHandler(async (request): Promise<ScriptedReply> => {
      if (request.lastMessage?.role === "tool") return { text: "Written." };
      await released;
      return {
        toolCalls: [{ name: "write_file", arguments: { path: "late.txt", content: "x\n" } }],
      };
    });
    const running = (
      await user.post(`/api/sessions/${sessionId}/turns`, { prompt: "Write late", providerId })
    ).body.turn._id as string;
    await waitFor(
      async () =>
        (await turnEvents(user, running)).some(
          (event) => event.type === "status" && event.data.message?.startsWith("Continuing"),
        ),
      30_000,
      "the turn in its worktree",
    );
    const refused = await user.post(`/api/turns/${earlier}/revert`, {});
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/turn of this session is running/);
    const self = await user.post(`/api/turns/${running}/revert`, {});
    expect(self.status).toBe(409);
    release();
    await waitForTurn(user, running, ["completed", "failed", "interrupted"], 60_000);
    model.setHandler(undefined);
    expect(existsSync(path.join(worktree, "list.txt"))).toBe(true);

    const stranger = await signup(server.url, "stranger");
    const hidden = await stranger.post(`/api/turns/${earlier}/revert`, {});
    expect(hidden.status).toBe(404);
  });

  it("restores what a turn whose commit failed left uncommitted, committing nothing", async () => {
    const older = await turnWriting("Write the memo", { "memo.txt": "memo\n" });
    const head = git(worktree, "rev-parse", "HEAD").trim();
    // Git's own lock on the worktree's index, held while the turn ends: its commit fails.
    const gitDirectory = /^gitdir:\s*(.+)$/m.exec(await read(".git"))?.[1]?.trim() ?? "";
    const indexLock = path.join(path.resolve(worktree, gitDirectory), "index.lock");
    model.enqueue(
      {
        toolCalls: [{ name: "write_file", arguments: { path: "memo.txt", content: "memo v2\n" } }],
      },
      async () => {
        await writeFile(indexLock, "");
        return { text: "Rewrote the memo." };
      },
    );
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Rewrite the memo",
      providerId,
    });
    const failing = created.body.turn._id as string;
    await waitForTurn(user, failing, ["completed", "failed", "interrupted"], 60_000);
    const events = await turnEvents(user, failing);
    expect(
      events.some(
        (event) =>
          event.type === "status" &&
          String(event.data.message).startsWith("The turn's changes stay uncommitted"),
      ),
    ).toBe(true);
    await rm(indexLock, { force: true });
    expect(await read("memo.txt")).toBe("memo v2\n");

    // An older turn cannot be reverted over uncommitted changes.
    const blocked = await user.post(`/api/turns/${older}/revert`, {});
    expect(blocked.status).toBe(409);
    expect(blocked.body.error.details.reason).toBe("uncommitted_changes");

    const restored = await user.post(`/api/turns/${failing}/revert`, {});
    expect(restored.status, JSON.stringify(restored.body)).toBe(202);
    expect(restored.body.revert).toEqual({ commit: null, files: ["memo.txt"] });
    expect(await read("memo.txt")).toBe("memo\n");
    expect(git(worktree, "status", "--porcelain").trim()).toBe("");
    expect(git(worktree, "rev-parse", "HEAD").trim()).toBe(head);
    const turn = (await user.get(`/api/turns/${failing}`)).body.turn;
    expect(turn.revertedAt).toBeTruthy();
    expect(turn.revertCommit).toBeNull();
  });

  it("says so in words when no drone holding the session's worktree is online", async () => {
    const turns = (await user.get(`/api/sessions/${sessionId}/turns`)).body.turns as Array<{
      _id: string;
      revertedAt: string | null;
      changes: unknown[];
    }>;
    const unreverted = turns.find((turn) => !turn.revertedAt && turn.changes.length > 0);
    if (!unreverted) throw new Error("runs after turns that changed files");
    drone.child.kill("SIGTERM");
    expect(await drone.exited).toBe(0);
    await waitFor(
      async () =>
        ((await user.get("/api/drones")).body.drones as Array<{ status: string }>).every(
          (item) => item.status !== "online",
        ),
      20_000,
      "the drone offline",
    );
    const answer = await user.post(`/api/turns/${unreverted._id}/revert`, {});
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe("no_drone_online");
    expect(answer.body.error.message).toMatch(/No online drone holds this session's worktree/);
  });
});

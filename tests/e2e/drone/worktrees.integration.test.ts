// Session worktrees end to end: one real drone (capacity 2) runs two sessions of one project at the
// same time, each in its own worktree on its own branch; a session's next turn goes on where the
// last one left its branch, two turns of one session wait for each other, the default-branch
// checkout the web IDE shows stays untouched, and a restarted drone prunes an idle worktree.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { sessionBranch } from "@gadget/protocol";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  messageText,
  type ScriptedModel,
  type ScriptedReply,
  type ScriptedRequest,
  startScriptedModel,
} from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { createRemote, worktreeDirectory } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type DroneProcess,
  settledEvents,
  startCli,
  startRegisteredDrone,
  turnEvents,
  waitForDroneOnline,
  waitForTurn,
} from "./helpers.ts";

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" });
}

/** The turn's own prompt: the last user message of the request. */
function promptOf(request: ScriptedRequest): string {
  const users = request.body.messages.filter((message) => message.role === "user");
  return messageText(users.at(-1));
}

describe("session worktrees end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess;
  let workspace: string;
  let providerId: string;
  let projectId: string;
  let projectSlug: string;
  let home: string;
  let config: string;
  const sessions: Record<string, { _id: string; name: string }> = {};

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_worktrees_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "worktrees");
    ({ home, workspace, config, drone } = await startRegisteredDrone(user, server.url, "parallel"));

    const remote = await createRemote({ "README.md": "# Shared\n" });
    providerId = (
      await user.post("/api/providers", {
        name: "scripted",
        baseUrl: model.baseUrl,
        apiKey: "sk-x",
        modelId: "scripted-model",
      })
    ).body.provider._id;
    const project = await user.post("/api/projects", { name: "Shared", gitUrl: remote.bare });
    projectId = project.body.project._id;
    projectSlug = project.body.project.slug;
    const patched = await user.patch(`/api/projects/${projectId}`, { branchPrefix: "team/" });
    expect(patched.body.project.branchPrefix).toBe("team/");
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  async function newSession(name: string): Promise<{ _id: string; name: string }> {
    const created = await user.post(`/api/projects/${projectId}/sessions`, { name });
    return { _id: created.body.session._id, name };
  }

  async function runTurn(sessionId: string, prompt: string): Promise<string> {
    const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
    expect(created.status).toBe(202);
    return created.body.turn._id;
  }

  /** Files the branch changed since it left main. */
  function changedOn(branch: string): string[] {
    const clone = path.join(workspace, projectSlug);
    return git(clone, "diff", "--name-only", `main...${branch}`).trim().split("\n");
  }

  it("runs two sessions of one project at the same time, each on its own branch", async () => {
    const north = await newSession("North wing");
    const south = await newSession("South wing");
    sessions.north = north;
    sessions.south = south;
    // Neither turn gets its first answer until both have asked: they run at the same time, or
    // the test never ends.
    const asked = new Set<string>();
    let bothAsked: () => void = () => {};
    const together = new Promise<void>((resolve) => {
      bothAsked = resolve;
    });
    model.setHandler(async (request): Promise<ScriptedReply> => {
      const wing = promptOf(request).includes("north") ? "north" : "south";
      if (request.lastMessage?.role === "tool") return { text: `The ${wing} file is written.` };
      asked.add(wing);
      if (asked.size === 2) bothAsked();
      await together;
      return {
        toolCalls: [
          { name: "write_file", arguments: { path: `${wing}.txt`, content: `${wing} wing\n` } },
        ],
      };
    });
    const turns = await Promise.all([
      runTurn(north._id, "Write the north file"),
      runTurn(south._id, "Write the south file"),
    ]);
    const [turn0] = await Promise.all(
      turns.map(async (turnId) => {
        const turn = await waitForTurn(
          user,
          turnId,
          ["completed", "failed", "interrupted"],
          60_000,
        );
        expect(turn.status, JSON.stringify(turn)).toBe("completed");
        return turn;
      }),
    );
    model.setHandler(undefined);

    const northBranch = sessionBranch("team/", north);
    const southBranch = sessionBranch("team/", south);
    expect(changedOn(northBranch)).toEqual(["north.txt"]);
    expect(changedOn(southBranch)).toEqual(["south.txt"]);
    // Each turn is one commit on its branch: the prompt's first line, then the turn's trailer.
    const northLog = git(
      path.join(workspace, projectSlug),
      "log",
      "-1",
      "--format=%B",
      northBranch,
    );
    expect(northLog.trim()).toBe(`Write the north file\n\nGadget-Turn: ${turns[0]}`);
    const northTree = worktreeDirectory(workspace, projectSlug, north._id);
    expect(await readFile(path.join(northTree, "north.txt"), "utf8")).toBe("north wing\n");
    expect(existsSync(path.join(northTree, "south.txt"))).toBe(false);
    // The web IDE's default-branch checkout has neither session's work.
    expect(existsSync(path.join(workspace, projectSlug, "north.txt"))).toBe(false);
    expect(existsSync(path.join(workspace, projectSlug, "south.txt"))).toBe(false);
    const events = await settledEvents(user, turns[0] as string);
    const messages = events
      .filter((event) => event.type === "status" && event.data.phase === "workspace")
      .map((event) => event.data.message as string);
    expect(messages).toContain(`New branch ${northBranch} from main`);
    // The turn records the commit it made on its branch.
    const northHead = git(path.join(workspace, projectSlug), "rev-parse", northBranch).trim();
    expect(turn0).toMatchObject({ branch: northBranch, commit: northHead });

    // The session's next turn finds its own work, and adds to its branch.
    let seen = "";
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "north.txt" } }] },
      (request) => {
        seen = JSON.stringify(request.body.messages);
        return {
          toolCalls: [
            { name: "write_file", arguments: { path: "north-2.txt", content: "more\n" } },
          ],
        };
      },
      { text: "Added another." },
    );
    const next = await runTurn(north._id, "Read the north file, then add another");
    const turn = await waitForTurn(user, next, ["completed", "failed", "interrupted"], 60_000);
    expect(turn.status).toBe("completed");
    const nextEvents = await settledEvents(user, next);
    expect(seen).toContain("north wing");
    expect(
      nextEvents.some(
        (event) =>
          event.type === "status" && event.data.message === `Continuing on branch ${northBranch}`,
      ),
    ).toBe(true);
    expect(changedOn(northBranch)).toEqual(["north-2.txt", "north.txt"]);
    expect(changedOn(southBranch)).toEqual(["south.txt"]);
    const clone = path.join(workspace, projectSlug);
    expect(git(clone, "rev-list", "--count", `main..${northBranch}`).trim()).toBe("2");
  });

  it("makes a session's second turn wait on the server for the first, then both land on its branch", async () => {
    const east = await newSession("East wing");
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    model.setHandler(async (request): Promise<ScriptedReply> => {
      const word = promptOf(request).includes("alpha") ? "alpha" : "omega";
      if (request.lastMessage?.role === "tool") return { text: `The ${word} file is written.` };
      // The first turn stays with the model, holding the worktree, until the second has waited.
      if (word === "alpha") await released;
      return {
        toolCalls: [
          { name: "write_file", arguments: { path: `${word}.txt`, content: `${word}\n` } },
        ],
      };
    });
    const statusOf = async (turnId: string, start: string, type = "status") =>
      (await turnEvents(user, turnId)).some(
        (event) => event.type === type && String(event.data.message).startsWith(start),
      );
    const first = await runTurn(east._id, "Write the alpha file");
    await waitFor(() => statusOf(first, "New branch"), 30_000, "the first turn in its worktree");
    const second = await runTurn(east._id, "Write the omega file");
    // The server holds it (no drone has it) until the first has finished.
    expect(await statusOf(second, "Waiting for the session's earlier turns", "queued")).toBe(true);
    expect((await user.get(`/api/turns/${second}`)).body.turn).toMatchObject({
      status: "queued",
      drone: null,
      waiting: { reason: "session_busy", position: 1 },
    });
    release();
    for (const turnId of [first, second]) {
      const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 60_000);
      expect(turn.status).toBe("completed");
    }
    model.setHandler(undefined);
    const branch = sessionBranch("team/", east);
    expect(changedOn(branch)).toEqual(["alpha.txt", "omega.txt"]);
    const clone = path.join(workspace, projectSlug);
    expect(git(clone, "log", "--format=%s", `main..${branch}`).trim().split("\n")).toEqual([
      "Write the omega file",
      "Write the alpha file",
    ]);
  });

  it("removes a worktree idle past the retention period when the drone starts, keeping its branch", async () => {
    const { north, south } = sessions as Record<string, { _id: string; name: string }>;
    if (!north || !south) throw new Error("runs after the parallel sessions");
    drone.child.kill("SIGTERM");
    expect(await drone.exited).toBe(0);
    // The south wing's session was last used ten days ago.
    const southTree = worktreeDirectory(workspace, projectSlug, south._id);
    const record = JSON.parse(await readFile(`${southTree}.json`, "utf8"));
    const longAgo = new Date(Date.now() - 10 * 86_400_000).toISOString();
    await writeFile(`${southTree}.json`, JSON.stringify({ ...record, lastUsedAt: longAgo }));

    drone = startCli(["--config", config, "--worktree-retention-days", "7"], home);
    await waitForDroneOnline(user, "parallel");
    await waitFor(() => !existsSync(southTree), 20_000, "the idle worktree to be removed");
    const northTree = worktreeDirectory(workspace, projectSlug, north._id);
    expect(await readFile(path.join(northTree, "north.txt"), "utf8")).toBe("north wing\n");
    const southBranch = sessionBranch("team/", south);
    expect(changedOn(southBranch)).toEqual(["south.txt"]);

    // The session's next turn checks its branch out again, its work there.
    model.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "south.txt" } }] },
      { text: "The south file is still there." },
    );
    const turnId = await runTurn(south._id, "Is the south file still there?");
    const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 60_000);
    expect(turn.status).toBe("completed");
    expect(await readFile(path.join(southTree, "south.txt"), "utf8")).toBe("south wing\n");
    const events = await settledEvents(user, turnId);
    expect(
      events.some(
        (event) =>
          event.type === "status" && event.data.message === `Continuing on branch ${southBranch}`,
      ),
    ).toBe(true);
  });
});

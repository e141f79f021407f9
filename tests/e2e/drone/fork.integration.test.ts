// Forking end to end with real drones: a fork at turn 2 of 4 starts its branch at turn 2's commit,
// its first request holds turns 1–2 and nothing later, and it runs at the same time as a new turn
// of its source on the one drone of capacity 2; a fork taken by another drone than the one holding
// the source's worktree starts from the source's commit as fetched from the project's remote.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  type ScriptedModel,
  type ScriptedReply,
  type ScriptedRequest,
  startScriptedModel,
} from "@gadget/testkit";
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
  return execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
}

/** What the request says apart from the system prompt: prompts, answers, tool results. */
function said(request: { messages: ScriptedRequest["body"]["messages"] }): unknown[] {
  return request.messages
    .filter((message) => message.role !== "system")
    .map((message) => message.content);
}

interface Turn {
  _id: string;
  drone: string;
  branch: string;
  commit: string | null;
}

describe("forking end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  const drones: DroneProcess[] = [];
  let homeWorkspace: string;
  let awayWorkspace: string;

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_fork_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "forks");
    // Registered with the default capacity of 2; turns say which they want by label.
    const [home, away] = await Promise.all([
      startRegisteredDrone(user, server.url, "home", { labels: ["pool=home"] }),
      startRegisteredDrone(user, server.url, "away", { labels: ["pool=away"] }),
    ]);
    drones.push(home.drone, away.drone);
    homeWorkspace = home.workspace;
    awayWorkspace = away.workspace;
  });

  afterAll(async () => {
    for (const drone of drones) drone.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  async function droneId(name: string): Promise<{ _id: string; capacity: number }> {
    const listed = (await user.get("/api/drones")).body.drones as Array<{
      _id: string;
      name: string;
      capacity: number;
    }>;
    const found = listed.find((drone) => drone.name === name);
    if (!found) throw new Error(`no drone named ${name}`);
    return found;
  }

  async function post(session: string, providerId: string, prompt: string, requires?: string[]) {
    const created = await user.post(`/api/sessions/${session}/turns`, {
      prompt,
      providerId,
      ...(requires ? { requires } : {}),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    return created.body.turn._id as string;
  }

  async function finished(turnId: string): Promise<Turn> {
    const turn = await waitForTurn(user, turnId, ["completed", "failed"], 60_000);
    expect(turn.status, JSON.stringify(turn)).toBe("completed");
    return turn;
  }

  /** Runs a turn writing `file` and waits for it; the model answers `Wrote <file>.` */
  async function writeTurn(
    session: string,
    providerId: string,
    file: string,
    requires?: string[],
  ): Promise<Turn & { commit: string }> {
    model.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: file, content: `${file}\n` } }] },
      { text: `Wrote ${file}.` },
    );
    const turn = await finished(await post(session, providerId, `Write ${file}`, requires));
    expect(turn.commit).toMatch(/^[0-9a-f]{40}$/);
    return turn as Turn & { commit: string };
  }

  async function fork(session: string, turnId: string): Promise<string> {
    const forked = await user.post(`/api/sessions/${session}/fork`, { turnId });
    expect(forked.status, JSON.stringify(forked.body)).toBe(201);
    expect(forked.body.session.forkedFrom).toEqual({ session, turn: turnId });
    return forked.body.session._id as string;
  }

  it("forks at turn 2 of 4: its branch at turn 2's commit, its context turns 1–2, beside the source", async () => {
    const { providerId, projectSlug, sessionId } = await createProjectSession(user, {
      name: "Forked",
      modelUrl: model.baseUrl,
    });
    const turns: Turn[] = [];
    for (const file of ["one.txt", "two.txt", "three.txt", "four.txt"]) {
      turns.push(await writeTurn(sessionId, providerId, file, ["pool=home"]));
    }
    const [, second, , fourth] = turns as [Turn, Turn, Turn, Turn];
    const forkId = await fork(sessionId, second._id);

    // Each turn's first request is held open until the other's has arrived too: both turns are
    // asking the model at once, or the wait below runs out.
    const held = new Map<string, ScriptedRequest>();
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    model.setHandler(async (request): Promise<ScriptedReply> => {
      const forked = said(request.body).includes("Look around the fork");
      if (request.lastMessage?.role === "tool") return { text: "Wrote five.txt." };
      if (forked) {
        held.set("fork", request);
        await released;
        return { text: "The fork holds one.txt and two.txt." };
      }
      held.set("source", request);
      await released;
      return {
        toolCalls: [{ name: "write_file", arguments: { path: "five.txt", content: "five\n" } }],
      };
    });
    // Neither asks for a drone: both go to the one holding the source's worktree.
    const forkTurnId = await post(forkId, providerId, "Look around the fork");
    const sourceTurnId = await post(sessionId, providerId, "Write five.txt");
    await waitFor(
      async () => held.size === 2,
      30_000,
      "the fork's and the source's first model requests to be open at the same time",
    );
    release();
    const [forkTurn, sourceTurn] = await Promise.all([
      finished(forkTurnId),
      finished(sourceTurnId),
    ]);
    model.setHandler(undefined);

    // Both ran on the one drone, whose capacity is 2, while the other drone was online too.
    const home = await droneId("home");
    expect(home.capacity).toBe(2);
    expect([forkTurn.drone, sourceTurn.drone]).toEqual([home._id, home._id]);

    // The fork's branch is at turn 2's commit (its turn changed nothing): turns 3 and 4 are not in it.
    expect(forkTurn.branch).not.toBe(sourceTurn.branch);
    const forkTree = worktreeDirectory(homeWorkspace, projectSlug, forkId);
    expect(git(forkTree, "rev-parse", "HEAD")).toBe(second.commit);
    expect(git(forkTree, "rev-parse", "--abbrev-ref", "HEAD")).toBe(forkTurn.branch);
    for (const file of ["one.txt", "two.txt"])
      expect(existsSync(path.join(forkTree, file))).toBe(true);
    for (const file of ["three.txt", "four.txt", "five.txt"])
      expect(existsSync(path.join(forkTree, file)), file).toBe(false);
    // The source went on from turn 4 meanwhile.
    const sourceTree = worktreeDirectory(homeWorkspace, projectSlug, sessionId);
    expect(git(sourceTree, "rev-parse", "HEAD~1")).toBe(fourth.commit);
    expect(existsSync(path.join(sourceTree, "five.txt"))).toBe(true);

    const forkAsked = said((held.get("fork") as ScriptedRequest).body);
    expect(forkAsked).toEqual(
      expect.arrayContaining([
        "Write one.txt",
        "Wrote one.txt.",
        "Write two.txt",
        "Wrote two.txt.",
      ]),
    );
    for (const later of [
      "Write three.txt",
      "Wrote three.txt.",
      "Write four.txt",
      "Wrote four.txt.",
    ])
      expect(forkAsked, later).not.toContain(later);
    expect(forkAsked).not.toContain("Write five.txt");
    const sourceAsked = said((held.get("source") as ScriptedRequest).body);
    expect(sourceAsked).toEqual(expect.arrayContaining(["Write four.txt", "Wrote four.txt."]));
    expect(sourceAsked).not.toContain("Look around the fork");
  }, 120_000);

  it("starts a fork taken by another drone from the source's commit fetched from the remote", async () => {
    const { providerId, projectId, projectSlug, sessionId } = await createProjectSession(user, {
      name: "Far fork",
      modelUrl: model.baseUrl,
    });
    // Delivered to the project's bare repository: the only way the other drone sees the commits.
    const patched = await user.patch(`/api/projects/${projectId}`, { delivery: "branch" });
    expect(patched.status).toBe(200);
    const bare = patched.body.project.gitUrl as string;

    const [, second, third] = [
      await writeTurn(sessionId, providerId, "one.txt", ["pool=home"]),
      await writeTurn(sessionId, providerId, "two.txt", ["pool=home"]),
      await writeTurn(sessionId, providerId, "three.txt", ["pool=home"]),
    ];
    expect(git(bare, "rev-parse", third.branch)).toBe(third.commit);
    const forkId = await fork(sessionId, second._id);
    const side = await writeTurn(forkId, providerId, "side.txt", ["pool=away"]);

    const [home, other] = [await droneId("home"), await droneId("away")];
    expect(third.drone).toBe(home._id);
    expect(side.drone).toBe(other._id);
    // The away drone never held the source's worktree: the fork's start came from the remote.
    expect(existsSync(worktreeDirectory(awayWorkspace, projectSlug, sessionId))).toBe(false);
    const forkTree = worktreeDirectory(awayWorkspace, projectSlug, forkId);
    expect(git(forkTree, "rev-parse", "HEAD")).toBe(side.commit);
    expect(git(forkTree, "rev-parse", "HEAD~1")).toBe(second.commit);
    for (const file of ["one.txt", "two.txt", "side.txt"])
      expect(existsSync(path.join(forkTree, file)), file).toBe(true);
    expect(existsSync(path.join(forkTree, "three.txt"))).toBe(false);
    // What the activity shows, and what the remote holds after the fork's delivery.
    const statuses = (await turnEvents(user, side._id))
      .filter((event) => event.type === "status")
      .map((event) => event.data.message as string);
    expect(statuses).toContain(
      `New branch ${side.branch} from commit ${second.commit.slice(0, 7)}`,
    );
    expect(git(bare, "rev-parse", `${side.branch}~1`)).toBe(second.commit);
    expect(git(bare, "rev-parse", third.branch)).toBe(third.commit);
  }, 120_000);
});

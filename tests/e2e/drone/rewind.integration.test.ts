// Rewinding and forking end to end with a real drone: a code rewind of two turns puts the files
// and the branch head back, keeps the old head and an uncommitted file under a backup ref, and the
// next request holds none of the rewound turns; a rewind of the conversation only leaves the files
// and the branch as they are; a fork's branch starts at its turn's commit and
// its first request holds the turns up to it.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ScriptedModel, type ScriptedRequest, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { worktreeDirectory } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createProjectSession,
  type DroneProcess,
  startRegisteredDrone,
  waitForTurn,
} from "./helpers.ts";

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
}

describe("rewind and fork end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess;
  let workspace: string;
  let providerId: string;
  let projectSlug: string;
  let sessionId: string;

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_rewind_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "rewinds");
    ({ workspace, drone } = await startRegisteredDrone(user, server.url, "rewinder"));
    ({ providerId, projectSlug, sessionId } = await createProjectSession(user, {
      name: "Rewind",
      modelUrl: model.baseUrl,
    }));
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  /** Runs a turn writing `file` and waits for it; answers the turn. */
  async function writeTurn(session: string, prompt: string, file: string) {
    model.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: file, content: `${file}\n` } }] },
      { text: `Wrote ${file}.` },
    );
    const created = await user.post(`/api/sessions/${session}/turns`, { prompt, providerId });
    expect(created.status).toBe(202);
    const turn = await waitForTurn(user, created.body.turn._id, ["completed", "failed"], 60_000);
    expect(turn.status, JSON.stringify(turn)).toBe("completed");
    return turn as { _id: string; commit: string };
  }

  const lastRequestText = () =>
    (model.chatRequests.at(-1) as ScriptedRequest["body"]).messages
      .map((message) => (typeof message.content === "string" ? message.content : ""))
      .join("\n");

  it("puts the code and the conversation back, keeping everything under a backup ref", async () => {
    const first = await writeTurn(sessionId, "Write the alpha file", "alpha.txt");
    const second = await writeTurn(sessionId, "Write the beta file", "beta.txt");
    await writeTurn(sessionId, "Write the gamma file", "gamma.txt");
    const worktree = worktreeDirectory(workspace, projectSlug, sessionId);
    const before = git(worktree, "rev-parse", "HEAD");
    await writeFile(path.join(worktree, "scratch.txt"), "by hand\n");
    // A file only a kept turn wrote, changed by hand: it goes back too, the change kept.
    await writeFile(path.join(worktree, "alpha.txt"), "edited by hand\n");

    const rewound = await user.post(`/api/sessions/${sessionId}/rewind`, {
      turnId: second._id,
      code: true,
    });
    expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
    expect(rewound.body.rewound).toHaveLength(2);
    const { code } = rewound.body;
    expect(code).toMatchObject({
      previousHead: before,
      head: first.commit,
      backupRef: `refs/gadget/rewound/${sessionId}/1`,
    });
    expect(git(worktree, "rev-parse", "HEAD")).toBe(first.commit);
    expect(existsSync(path.join(worktree, "alpha.txt"))).toBe(true);
    for (const gone of ["beta.txt", "gamma.txt", "scratch.txt"])
      expect(existsSync(path.join(worktree, gone)), gone).toBe(false);
    // Nothing is lost: the backup holds the old head and the hand-written file.
    const kept = git(worktree, "ls-tree", "-r", "--name-only", code.backupRef).split("\n");
    expect(kept).toEqual(
      expect.arrayContaining(["alpha.txt", "beta.txt", "gamma.txt", "scratch.txt"]),
    );
    expect(git(worktree, "rev-parse", `${code.backupRef}^`)).toBe(before);
    expect(git(worktree, "show", `${code.backupRef}:alpha.txt`)).toBe("edited by hand");
    expect(await readFile(path.join(worktree, "alpha.txt"), "utf8")).toBe("alpha.txt\n");

    await writeTurn(sessionId, "Write the delta file", "delta.txt");
    const asked = lastRequestText();
    expect(asked).toContain("Write the alpha file");
    expect(asked).not.toContain("Write the beta file");
    expect(asked).not.toContain("Write the gamma file");
    expect(await readFile(path.join(worktree, "delta.txt"), "utf8")).toBe("delta.txt\n");
  });

  it("keeps the files and the branch when only the conversation is rewound", async () => {
    const created = await createProjectSession(user, {
      name: "Talk back",
      modelUrl: model.baseUrl,
    });
    const session = created.sessionId;
    await writeTurn(session, "Write the north file", "north.txt");
    const south = await writeTurn(session, "Write the south file", "south.txt");
    const worktree = worktreeDirectory(workspace, created.projectSlug, session);
    const head = git(worktree, "rev-parse", "HEAD");

    const rewound = await user.post(`/api/sessions/${session}/rewind`, {
      turnId: south._id,
      conversation: true,
    });
    expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
    expect(rewound.body).toMatchObject({ rewound: [south._id], code: null });
    expect(git(worktree, "rev-parse", "HEAD")).toBe(head);
    expect(await readFile(path.join(worktree, "south.txt"), "utf8")).toBe("south.txt\n");
    const turn = (await user.get(`/api/turns/${south._id}`)).body.turn;
    expect(turn.rewoundAt).toBeTruthy();

    await writeTurn(session, "Write the east file", "east.txt");
    // The conversation leaves the south turn out (its commit is still in the git log it is shown).
    const said = (model.chatRequests.at(-1) as ScriptedRequest["body"]).messages
      .filter((message) => message.role !== "system")
      .map((message) => message.content);
    expect(said).toEqual(expect.arrayContaining(["Write the north file", "Wrote north.txt."]));
    expect(said).not.toContain("Write the south file");
    expect(said).not.toContain("Wrote south.txt.");
    expect(git(worktree, "rev-parse", "HEAD~1")).toBe(head);
  });

  it("moves a delivering project's remote branch back with a lease, refusing to overwrite a push made since", async () => {
    const created = await createProjectSession(user, {
      name: "Delivered",
      modelUrl: model.baseUrl,
    });
    const patched = await user.patch(`/api/projects/${created.projectId}`, { delivery: "branch" });
    expect(patched.status).toBe(200);
    const bare = patched.body.project.gitUrl as string;
    const session = created.sessionId;
    const one = await writeTurn(session, "Write one", "one.txt");
    const two = await writeTurn(session, "Write two", "two.txt");
    const branch = (two as unknown as { branch: string }).branch;
    expect(git(bare, "rev-parse", branch)).toBe(two.commit);

    const back = await user.post(`/api/sessions/${session}/rewind`, {
      turnId: two._id,
      code: true,
    });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.code).toMatchObject({ head: one.commit, pushed: true });
    expect(git(bare, "rev-parse", branch)).toBe(one.commit);

    // Someone pushes to the branch after the drone's last push: the rewind must not drop it.
    const three = await writeTurn(session, "Write three", "three.txt");
    const elsewhere = path.join(workspace, "..", "elsewhere");
    execFileSync("git", ["clone", "--quiet", "--branch", branch, bare, elsewhere]);
    await writeFile(path.join(elsewhere, "theirs.txt"), "theirs\n");
    git(elsewhere, "add", "theirs.txt");
    git(
      elsewhere,
      "-c",
      "user.name=Other",
      "-c",
      "user.email=o@example.com",
      "commit",
      "-qm",
      "Theirs",
    );
    git(elsewhere, "push", "--quiet", "origin", branch);
    const theirs = git(elsewhere, "rev-parse", "HEAD");

    const refused = await user.post(`/api/sessions/${session}/rewind`, {
      turnId: three._id,
      code: true,
    });
    expect(refused.status).toBe(200);
    expect(refused.body.code).toMatchObject({ head: one.commit, pushed: false });
    expect(refused.body.code.pushError).toBeTruthy();
    expect(git(bare, "rev-parse", branch)).toBe(theirs);
    // The rewound turn's commit is kept locally under the backup ref.
    const worktree = worktreeDirectory(workspace, created.projectSlug, session);
    expect(git(worktree, "rev-parse", refused.body.code.backupRef)).toBe(three.commit);
  });

  it("forks a session whose branch starts at the turn's commit and whose context ends there", async () => {
    const turns = (await user.get(`/api/sessions/${sessionId}/turns`)).body.turns as Array<{
      _id: string;
      prompt: string;
      commit: string;
    }>;
    const alpha = turns.find((turn) => turn.prompt === "Write the alpha file");
    if (!alpha) throw new Error("the alpha turn ran first");
    const forked = await user.post(`/api/sessions/${sessionId}/fork`, { turnId: alpha._id });
    expect(forked.status).toBe(201);
    const fork = forked.body.session;
    await writeTurn(fork._id, "Write the side file", "side.txt");
    const asked = lastRequestText();
    expect(asked).toContain("Write the alpha file");
    expect(asked).not.toContain("Write the delta file");
    const forkTree = worktreeDirectory(workspace, projectSlug, fork._id);
    expect(git(forkTree, "rev-parse", "HEAD~1")).toBe(alpha.commit);
    expect(existsSync(path.join(forkTree, "delta.txt"))).toBe(false);
    expect(existsSync(path.join(forkTree, "side.txt"))).toBe(true);
  });
});

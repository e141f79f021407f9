// Delivery end to end: a project set to deliver branches has a real drone push each turn's commit
// to a smart-HTTP remote (`git http-backend` behind basic authentication) with the credentials of
// the drone machine's own git config. A wrong credential leaves the turn completed with the reason
// in words and no secret anywhere; once the credential is fixed, "deliver now" pushes the branch
// (and is refused while a turn of the session runs).
import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { sessionBranch } from "@gadget/protocol";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  type GitHttpServer,
  type ScriptedModel,
  startGitHttpServer,
  startScriptedModel,
} from "@gadget/testkit";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { createRemote } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type DroneProcess,
  freshHome,
  settledEvents,
  startRegisteredDrone,
  waitForTurn,
} from "./helpers.ts";

const rightPassword = "correct-horse-battery";
const wrongPassword = "stale-password-1234";

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" });
}

describe("delivering a session's branch end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let forge: GitHttpServer;
  let user: ApiClient;
  let drone: DroneProcess;
  let home: string;
  let bare: string;
  let providerId: string;
  let projectId: string;

  /** The drone machine's credential, as `git credential-store` keeps it. */
  async function storeCredential(password: string): Promise<void> {
    const origin = new URL(forge.url);
    await writeFile(
      path.join(home, ".git-credentials"),
      `http://ada:${password}@${origin.host}\n`,
      { mode: 0o600 },
    );
  }

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_delivery_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "delivery");
    const remote = await createRemote({ "README.md": "# Delivered\n" });
    bare = remote.bare;
    // Anyone may fetch; a push needs the account (a public repository on a forge).
    forge = await startGitHttpServer({
      root: path.dirname(bare),
      accounts: { ada: rightPassword },
      authenticate: "push",
    });
    home = await freshHome();
    // The drone machine's git setup: a credential store in its global config.
    await writeFile(path.join(home, ".gitconfig"), "[credential]\n\thelper = store\n");
    await storeCredential(wrongPassword);
    ({ drone } = await startRegisteredDrone(user, server.url, "deliverer", { home }));
    providerId = (
      await user.post("/api/providers", {
        name: "scripted",
        baseUrl: model.baseUrl,
        apiKey: "sk-x",
        modelId: "scripted-model",
      })
    ).body.provider._id;
    const project = await user.post("/api/projects", {
      name: "Delivered",
      gitUrl: `${forge.url}/project.git`,
    });
    projectId = project.body.project._id;
    const patched = await user.patch(`/api/projects/${projectId}`, {
      delivery: "branch",
      commitAuthor: { name: "Ada Lovelace", email: "ada@example.com" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.project.delivery).toBe("branch");
    expect(patched.body.project.commitAuthor).toEqual({
      name: "Ada Lovelace",
      email: "ada@example.com",
    });
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await forge?.close();
    await model?.close();
    await server?.close();
  });

  async function runTurn(sessionId: string, prompt: string, file: string): Promise<string> {
    model.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: file, content: `${prompt}\n` } }] },
      { text: "Written." },
    );
    const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
    expect(created.status).toBe(202);
    return created.body.turn._id;
  }

  /** The remote's commit on `branch`, or null when the branch is not there. */
  function remoteCommit(branch: string): string | null {
    try {
      return git(bare, "rev-parse", "--verify", "--quiet", `refs/heads/${branch}`).trim();
    } catch {
      return null;
    }
  }

  it("a wrong credential leaves the turn completed with the reason; deliver now pushes once it is fixed", async () => {
    const session = (await user.post(`/api/projects/${projectId}/sessions`, { name: "Login fix" }))
      .body.session;
    const branch = sessionBranch("gadget/", session);
    const turnId = await runTurn(session._id, "Write the login fix", "login.txt");
    const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 60_000);
    expect(turn.status, JSON.stringify(turn)).toBe("completed");
    expect(turn.delivery).toMatchObject({
      branch,
      pushedAt: null,
      error: "authentication failed for origin",
    });
    expect(turn.delivery.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(remoteCommit(branch)).toBeNull();
    expect(forge.refused()).toBeGreaterThan(0);

    const events = await settledEvents(user, turnId);
    const delivery = events.find((event) => event.type === "delivery");
    expect(delivery?.data).toMatchObject({ branch, pushed: false });
    // The delivery comes before the end of the turn.
    expect(events.at(-1)?.type).toBe("done");
    expect(events.indexOf(delivery)).toBeLessThan(events.length - 1);
    // No secret in the turn's events or the drone's logs.
    const logs = `${drone.output()}\n${await readFile(path.join(home, "drone.log"), "utf8").catch(() => "")}`;
    for (const text of [JSON.stringify(events), JSON.stringify(turn), logs]) {
      expect(text).not.toContain(wrongPassword);
      expect(text).not.toContain(rightPassword);
    }

    // The user fixes the machine's credential and delivers now.
    await storeCredential(rightPassword);
    const delivered = await user.post(`/api/sessions/${session._id}/deliver`);
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(202);
    expect(delivered.body.delivery).toMatchObject({
      branch,
      pushed: true,
      committed: false,
      turnId,
    });
    expect(remoteCommit(branch)).toBe(turn.delivery.commit);
    const after = (await user.get(`/api/turns/${turnId}`)).body.turn;
    expect(after.status).toBe("completed");
    expect(after.delivery).toMatchObject({ branch, commit: turn.delivery.commit, error: null });
    expect(after.delivery.pushedAt).not.toBeNull();
  });

  it("with the right credential the turn's commit arrives on the remote branch, by the project's author", async () => {
    const session = (
      await user.post(`/api/projects/${projectId}/sessions`, { name: "Signup page" })
    ).body.session;
    const branch = sessionBranch("gadget/", session);
    const turnId = await runTurn(session._id, "Write the signup page", "signup.txt");
    const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 60_000);
    expect(turn.status, JSON.stringify(turn)).toBe("completed");
    expect(turn.delivery).toMatchObject({ branch, error: null, pullRequestUrl: null });
    expect(turn.delivery.pushedAt).not.toBeNull();
    expect(remoteCommit(branch)).toBe(turn.delivery.commit);
    expect(git(bare, "log", "-1", "--format=%an <%ae>%n%B", branch).trim()).toBe(
      `Ada Lovelace <ada@example.com>\nWrite the signup page\n\nGadget-Turn: ${turnId}`,
    );
    expect(git(bare, "show", `${branch}:signup.txt`)).toBe("Write the signup page\n");
    const events = await settledEvents(user, turnId);
    expect(events.find((event) => event.type === "delivery")?.data).toEqual({
      branch,
      commit: turn.delivery.commit,
      pushed: true,
    });
  });

  it("a reverted turn of a delivering project is reverted on the remote branch too", async () => {
    const session = (
      await user.post(`/api/projects/${projectId}/sessions`, { name: "Pricing page" })
    ).body.session;
    const branch = sessionBranch("gadget/", session);
    const turnId = await runTurn(session._id, "Write the pricing page", "pricing.txt");
    const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 60_000);
    expect(turn.delivery.pushedAt).not.toBeNull();

    const reverted = await user.post(`/api/turns/${turnId}/revert`);
    expect(reverted.status, JSON.stringify(reverted.body)).toBe(202);
    expect(reverted.body.revert).toMatchObject({ files: ["pricing.txt"], pushed: true });
    expect(remoteCommit(branch)).toBe(reverted.body.revert.commit);
    expect(git(bare, "ls-tree", "--name-only", branch, "pricing.txt").trim()).toBe("");
    expect(git(bare, "log", "-1", "--format=%B", branch).trim()).toBe(
      `Revert "Write the pricing page"\n\nGadget-Turn-Reverted: ${turnId}`,
    );
  });

  it("refuses to deliver while a turn of the session runs", async () => {
    const session = (await user.post(`/api/projects/${projectId}/sessions`, { name: "Busy" })).body
      .session;
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let asked: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      asked = resolve;
    });
    model.enqueue(async () => {
      asked();
      await released;
      return { text: "Done thinking." };
    });
    const created = await user.post(`/api/sessions/${session._id}/turns`, {
      prompt: "Think for a while",
      providerId,
    });
    await running;
    const refused = await user.post(`/api/sessions/${session._id}/deliver`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain("queued or running");
    release();
    const turn = await waitForTurn(user, created.body.turn._id, ["completed", "failed"], 60_000);
    expect(turn.status).toBe("completed");
  });

  it("answers 404 for another user's session and 503 when no drone holds the worktree", async () => {
    const session = (await user.post(`/api/projects/${projectId}/sessions`, { name: "Never run" }))
      .body.session;
    const stranger = await signup(server.url, "delivery-stranger");
    const refused = await stranger.post(`/api/sessions/${session._id}/deliver`);
    expect(refused.status).toBe(404);
    const nothing = await user.post(`/api/sessions/${session._id}/deliver`);
    expect(nothing.status).toBe(503);
    expect(nothing.body.error.message).toContain("No online drone holds this session's worktree");
  });
});

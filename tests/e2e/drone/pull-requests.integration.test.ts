// Pull requests end to end: a project delivering pull requests has a real drone push each turn's
// commit to a smart-HTTP remote (`git http-backend`), then open the session's pull request on a
// loopback stand-in of GitHub's REST API (the forge is not reachable from test machines), and a
// later turn update its body; a code rewind updates it to the turns kept. A wrong token leaves the
// turn completed with the reason in words and the token nowhere; once the token is replaced,
// "deliver now" opens the pull request.
import { execFileSync } from "node:child_process";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { sessionBranch } from "@gadget/protocol";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  type ForgeStandIn,
  type GitHttpServer,
  type ScriptedModel,
  startForgeStandIn,
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

const password = "correct-horse-battery";
const rightToken = "ghp_rightForgeToken0123456789abcdef";
const wrongToken = "ghp_revokedForgeToken9876543210fedc";

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" });
}

describe("pull requests end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let remote: GitHttpServer;
  let forge: ForgeStandIn;
  let user: ApiClient;
  let drone: DroneProcess;
  let home: string;
  let bare: string;
  let providerId: string;
  let projectId: string;

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") },
      `drone_pull_requests_${process.pid}`,
    );
    model = await startScriptedModel();
    user = await signup(server.url, "pull-requests");
    // The repository lives at <root>/ada/project.git: GitHub's owner/repo in its URL.
    const created = (await createRemote({ "README.md": "# Reviewed\n" })).bare;
    bare = path.join(path.dirname(created), "ada", "project.git");
    await mkdir(path.dirname(bare), { recursive: true });
    await rename(created, bare);
    remote = await startGitHttpServer({
      root: path.dirname(path.dirname(bare)),
      accounts: { ada: password },
      authenticate: "push",
    });
    forge = await startForgeStandIn({
      token: rightToken,
      repositories: ["ada/project"],
      // As GitHub, a pull request needs its branches on the remote.
      branchExists: (_repository, branch) => remoteCommit(branch) !== null,
    });
    home = await freshHome();
    await writeFile(path.join(home, ".gitconfig"), "[credential]\n\thelper = store\n");
    await writeFile(
      path.join(home, ".git-credentials"),
      `http://ada:${password}@${new URL(remote.url).host}\n`,
      { mode: 0o600 },
    );
    ({ drone } = await startRegisteredDrone(user, server.url, "reviewer", { home }));
    providerId = (
      await user.post("/api/providers", {
        name: "scripted",
        baseUrl: model.baseUrl,
        apiKey: "sk-x",
        modelId: "scripted-model",
      })
    ).body.provider._id;
    const project = await user.post("/api/projects", {
      name: "Reviewed",
      gitUrl: `${remote.url}/ada/project.git`,
    });
    projectId = project.body.project._id;
    const patched = await user.patch(`/api/projects/${projectId}`, {
      delivery: "pull-request",
      forge: { kind: "github", apiUrl: forge.githubApiUrl, token: wrongToken },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.project.forge).toEqual({
      kind: "github",
      apiUrl: forge.githubApiUrl,
      hasToken: true,
      events: null,
      hasEventsSecret: false,
    });
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await forge?.stop();
    await remote?.close();
    await model?.close();
    await server?.close();
  });

  function remoteCommit(branch: string): string | null {
    try {
      return git(bare, "rev-parse", "--verify", "--quiet", `refs/heads/${branch}`).trim();
    } catch {
      return null;
    }
  }

  async function runTurn(sessionId: string, prompt: string, file: string) {
    model.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: file, content: `${prompt}\n` } }] },
      { text: "Written." },
    );
    const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
    expect(created.status).toBe(202);
    const turnId: string = created.body.turn._id;
    const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 60_000);
    expect(turn.status, JSON.stringify(turn)).toBe("completed");
    return { turnId, turn };
  }

  async function droneLogs(): Promise<string> {
    const file = await readFile(path.join(home, "drone.log"), "utf8").catch(() => "");
    return `${drone.output()}\n${file}`;
  }

  it("a wrong token leaves the turn completed with the reason; deliver now opens it once the token is replaced", async () => {
    const session = (await user.post(`/api/projects/${projectId}/sessions`, { name: "Login fix" }))
      .body.session;
    const branch = sessionBranch("gadget/", session);
    const { turnId, turn } = await runTurn(session._id, "Write the login fix", "login.txt");
    // Pushed, but no pull request: the forge refused the token.
    expect(turn.delivery).toMatchObject({
      branch,
      pullRequestUrl: null,
      error: "GitHub refused the token (401) for ada/project",
    });
    expect(turn.delivery.pushedAt).not.toBeNull();
    expect(remoteCommit(branch)).toBe(turn.delivery.commit);
    expect(forge.pullRequests()).toEqual([]);
    const events = await settledEvents(user, turnId);
    for (const text of [JSON.stringify(events), JSON.stringify(turn), await droneLogs()]) {
      expect(text).not.toContain(wrongToken);
      expect(text).not.toContain(rightToken);
    }

    const replaced = await user.patch(`/api/projects/${projectId}`, {
      forge: { kind: "github", apiUrl: forge.githubApiUrl, token: rightToken },
    });
    expect(replaced.status).toBe(200);
    expect(JSON.stringify(replaced.body)).not.toContain(rightToken);
    const delivered = await user.post(`/api/sessions/${session._id}/deliver`);
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(202);
    const url = `${forge.url}/ada/project/pull/1`;
    expect(delivered.body.delivery).toMatchObject({
      branch,
      pushed: true,
      turnId,
      pullRequest: { url, number: 1 },
    });
    expect(delivered.body.delivery.error).toBeUndefined();
    const after = (await user.get(`/api/turns/${turnId}`)).body.turn;
    expect(after.delivery).toMatchObject({ branch, pullRequestUrl: url, error: null });
    // The session says where its pull request is, and where its branch stands.
    const detail = (await user.get(`/api/sessions/${session._id}`)).body.session;
    expect(detail).toMatchObject({ branch, pullRequest: { url, number: 1 } });
    expect(detail.worktree).toMatchObject({ ahead: 1, behind: 0, dirty: false });
    expect(forge.pullRequests()).toEqual([
      {
        repository: "ada/project",
        number: 1,
        title: "Write the login fix",
        body: 'Opened by Gadget Code for the session "Login fix".\n\nTurns:\n1. Write the login fix',
        head: branch,
        base: "main",
        state: "open",
      },
    ]);
    for (const text of [JSON.stringify(delivered.body), JSON.stringify(after), await droneLogs()]) {
      expect(text).not.toContain(rightToken);
    }
  });

  it("a turn opens the session's pull request after its push, and the next turn updates its body", async () => {
    const session = (await user.post(`/api/projects/${projectId}/sessions`, { name: "Signup" }))
      .body.session;
    const branch = sessionBranch("gadget/", session);
    const first = await runTurn(session._id, "Write the signup page\nWith a form", "signup.txt");
    const opened = forge.pullRequests().find((pull) => pull.head === branch);
    expect(opened).toMatchObject({ title: "Write the signup page", base: "main", state: "open" });
    const url = `${forge.url}/ada/project/pull/${opened?.number}`;
    expect(first.turn.delivery).toMatchObject({ branch, pullRequestUrl: url, error: null });
    const events = await settledEvents(user, first.turnId);
    const delivery = events.find((event) => event.type === "delivery");
    expect(delivery?.data).toMatchObject({ branch, pushed: true, pullRequestUrl: url });
    // What the session page says meanwhile names the forge.
    expect(
      events.some(
        (event) =>
          event.type === "status" &&
          (event.data as { message?: string }).message ===
            `Opening a pull request on GitHub for ${branch}`,
      ),
    ).toBe(true);
    // The pull request is known before the turn ends.
    expect(events.indexOf(delivery)).toBeLessThan(events.length - 1);
    expect(events.at(-1)?.type).toBe("done");

    const before = forge.requests().length;
    const second = await runTurn(session._id, "Add a signup test", "signup.test.txt");
    expect(second.turn.delivery).toMatchObject({ pullRequestUrl: url, error: null });
    expect(remoteCommit(branch)).toBe(second.turn.delivery.commit);
    // The server remembered the session's pull request: the drone found it open and updated it,
    // opened none.
    expect(
      forge
        .requests()
        .slice(before)
        .map((request) => `${request.method} ${request.path} ${request.status}`),
    ).toEqual([
      `GET /api/v3/repos/ada/project/pulls/${opened?.number} 200`,
      `PATCH /api/v3/repos/ada/project/pulls/${opened?.number} 200`,
    ]);
    expect(forge.pullRequests().find((pull) => pull.head === branch)?.body).toBe(
      'Opened by Gadget Code for the session "Signup".\n\nTurns:\n1. Write the signup page\n2. Add a signup test',
    );
    const turns = (await user.get(`/api/sessions/${session._id}/turns`)).body.turns;
    expect(
      turns.map((turn: { delivery: { pullRequestUrl: string } }) => turn.delivery.pullRequestUrl),
    ).toEqual([url, url]);
  });

  it("a code rewind moves the branch back and updates the pull request's body to the turns kept", async () => {
    const session = (await user.post(`/api/projects/${projectId}/sessions`, { name: "Profile" }))
      .body.session;
    const branch = sessionBranch("gadget/", session);
    const first = await runTurn(session._id, "Write the profile page", "profile.txt");
    const second = await runTurn(session._id, "Add a profile photo", "photo.txt");
    const pull = () => forge.pullRequests().find((request) => request.head === branch);
    expect(pull()?.body).toContain("2. Add a profile photo");

    const rewound = await user.post(`/api/sessions/${session._id}/rewind`, {
      turnId: second.turnId,
      code: true,
    });
    expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
    expect(rewound.body.code).toMatchObject({ head: first.turn.commit, pushed: true });
    expect(rewound.body.code.pullRequestError).toBeUndefined();
    expect(remoteCommit(branch)).toBe(first.turn.commit);
    expect(pull()).toMatchObject({
      state: "open",
      body: 'Opened by Gadget Code for the session "Profile".\n\nTurns:\n1. Write the profile page',
    });
    expect(JSON.stringify(rewound.body)).not.toContain(rightToken);
  });
});

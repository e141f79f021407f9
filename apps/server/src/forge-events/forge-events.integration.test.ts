// Forge events from GitHub and GitLab over real HTTP, a real database and the forge stand-in
// (its collaborator permission, members and comments): a writer's signed comment queues a turn
// in the issue's session and the forge user comments back; a reader, GitHub's own signature under
// the wrong secret and GitLab's wrong token are refused or ignored with the reason.
import { type ForgeStandIn, startForgeStandIn } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signup, waitFor } from "../testing/api-client.ts";
import { useTestServer } from "../testing/use-test-server.ts";
import { forgeSignature } from "./signature.ts";

// The stand-in is on loopback.
const fixture = useTestServer({ allowPrivateNetwork: true });
const token = "ghp_standinForgeToken0123456789";
let forge: ForgeStandIn;

beforeAll(async () => {
  forge = await startForgeStandIn({
    token,
    repositories: ["ada/engine", "acme/app"],
    permissions: { ada: "write", rex: "read" },
    members: { 5: 30, 6: 20 },
  });
});
afterAll(async () => {
  await forge?.stop();
});

const issue = {
  number: 12,
  title: "Fix the login",
  body: "It fails on Safari",
  html_url: "https://github.com/ada/engine/issues/12",
};

describe("forge events from GitHub and GitLab", () => {
  it("a GitHub writer's signed @gadget comment queues a turn in issue-12 and is answered with a comment; a reader is ignored", async () => {
    const user = await signup(fixture.server.url, "forge-events-github");
    await user.post("/api/providers", {
      name: "scripted",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: "sk-x",
      modelId: "scripted-model",
    });
    const project = (
      await user.post("/api/projects", {
        name: "Engine",
        gitUrl: "https://github.com/ada/engine.git",
        delivery: "pull-request",
        forge: {
          kind: "github",
          apiUrl: forge.githubApiUrl,
          token,
          events: { enabled: true },
        },
      })
    ).body.project;
    const { url, secret } = (await user.post(`/api/projects/${project._id}/forge-events/secret`))
      .body;
    const send = (sender: string, delivery: string, key = secret) => {
      const body = JSON.stringify({
        action: "created",
        issue,
        comment: { id: 1, body: "@gadget please", html_url: "https://x" },
        sender: { login: sender, id: 1 },
      });
      return fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "issue_comment",
          "x-github-delivery": delivery,
          "x-hub-signature-256": `sha256=${forgeSignature(key, body)}`,
        },
        body,
      });
    };
    expect((await send("ada", "g-0", "not-the-secret")).status).toBe(401);
    const accepted = await send("ada", "g-1");
    const answer = (await accepted.json()) as {
      sessionId: string;
      turnId: string;
      outcome: string;
    };
    expect(accepted.status, JSON.stringify(answer)).toBe(202);
    const { sessionId, turnId, outcome } = answer;
    expect(outcome).toBe("started");
    const session = (await user.get(`/api/sessions/${sessionId}`)).body.session;
    expect(session.name).toBe("issue-12");
    const turn = (await user.get(`/api/turns/${turnId}`)).body.turn;
    expect(turn.prompt.split("\n")[0]).toBe("Fix the login (#12)");
    const posted = await waitFor(
      () => forge.comments().find((comment) => comment.number === 12),
      10_000,
      "the forge user's comment",
    );
    expect(posted?.body).toBe(
      `Gadget Code is working on this: ${fixture.server.publicUrl}/projects/${project._id}/sessions/${sessionId}`,
    );

    const reader = await send("rex", "g-2");
    expect(reader.status).toBe(200);
    expect(await reader.json()).toEqual({ ignored: "@rex has no write access to ada/engine" });
    const listed = (await user.get(`/api/projects/${project._id}/forge-events`)).body.deliveries;
    expect(listed.map((entry: { outcome: string }) => entry.outcome)).toEqual([
      "ignored",
      "started",
      "refused",
    ]);
  });

  it("a GitLab developer's note with the token queues a turn; a reporter is ignored; a wrong token is 401", async () => {
    const user = await signup(fixture.server.url, "forge-events-gitlab");
    await user.post("/api/providers", {
      name: "scripted",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: "sk-x",
      modelId: "scripted-model",
    });
    const project = (
      await user.post("/api/projects", {
        name: "App",
        gitUrl: "https://gitlab.example.org/acme/app.git",
        delivery: "pull-request",
        forge: { kind: "gitlab", apiUrl: forge.gitlabApiUrl, token, events: { enabled: true } },
      })
    ).body.project;
    const { url, secret } = (await user.post(`/api/projects/${project._id}/forge-events/secret`))
      .body;
    const send = (userId: number, key = secret) =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-gitlab-event": "Note Hook",
          "x-gitlab-token": key,
        },
        body: JSON.stringify({
          object_kind: "note",
          user: { username: `user${userId}`, id: userId },
          object_attributes: { id: 3, note: "@gadget fix it", noteable_type: "Issue" },
          issue: { iid: 4, title: "Broken", description: "It is.", url: "https://x/4" },
        }),
      });
    expect((await send(5, "wrong")).status).toBe(401);
    const accepted = await send(5);
    expect(accepted.status).toBe(202);
    await waitFor(
      () => forge.comments().find((comment) => comment.repository === "acme/app"),
      10_000,
      "the GitLab note",
    );
    const reporter = await send(6);
    expect(await reporter.json()).toEqual({ ignored: "@user6 has no write access to acme/app" });
  });

  it("a failed check on a session's pull request follows up twice in a row at most, when asked for", async () => {
    const user = await signup(fixture.server.url, "forge-events-checks");
    await user.post("/api/providers", {
      name: "scripted",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: "sk-x",
      modelId: "scripted-model",
    });
    const project = (
      await user.post("/api/projects", {
        name: "Checked",
        gitUrl: "https://github.com/ada/engine.git",
        forge: {
          kind: "github",
          apiUrl: forge.githubApiUrl,
          token,
          events: { enabled: true, checkFollowUps: true },
        },
      })
    ).body.project;
    const session = (await user.post(`/api/projects/${project._id}/sessions`, { name: "Fix" })).body
      .session;
    await fixture.server.context.models.ChatSession.updateOne(
      { _id: session._id },
      { $set: { pullRequest: { url: "https://github.com/ada/engine/pull/3", number: 3 } } },
    );
    const { url, secret } = (await user.post(`/api/projects/${project._id}/forge-events/secret`))
      .body;
    let deliveries = 0;
    const send = async (conclusion: string) => {
      deliveries += 1;
      const body = JSON.stringify({
        action: "completed",
        check_run: {
          name: "test",
          conclusion,
          html_url: "https://github.com/ada/engine/runs/1",
          output: {
            title: "1 failed",
            summary: "login.test.ts: expected 200, got 500",
            text: null,
          },
          pull_requests: [{ number: 3 }],
        },
        sender: { login: "github-actions[bot]", id: 41898282 },
      });
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "check_run",
          "x-github-delivery": `c-${deliveries}`,
          "x-hub-signature-256": `sha256=${forgeSignature(secret, body)}`,
        },
        body,
      });
      return { status: response.status, body: (await response.json()) as Record<string, string> };
    };
    expect((await send("success")).body).toEqual({ ignored: "the check test did not fail" });
    const first = await send("failure");
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ outcome: "followed_up", sessionId: session._id });
    const turn = (await user.get(`/api/turns/${first.body.turnId}`)).body.turn;
    expect(turn.prompt).toContain("The check test failed on pull request #3");
    expect(turn.prompt).toContain("login.test.ts: expected 200, got 500");
    expect((await send("timed_out")).status).toBe(202);
    expect((await send("failure")).body).toEqual({
      ignored: "2 check follow-ups in a row already: a person asks for the next",
    });
    // Off unless asked for.
    await user.patch(`/api/projects/${project._id}`, {
      forge: { kind: "github", apiUrl: forge.githubApiUrl, events: { enabled: true } },
    });
    expect((await send("failure")).body).toEqual({ ignored: "check follow-ups are off" });
  });
});

describe("a project's webhook secret made while the project is edited", () => {
  it("is the one its events are checked with, and the edits stay", async () => {
    const user = await signup(fixture.server.url, "forge-events-secret-race");
    const forgeBody = { kind: "github", apiUrl: forge.githubApiUrl, events: { enabled: true } };
    const project = (
      await user.post("/api/projects", {
        name: "Engine",
        gitUrl: "https://github.com/ada/engine.git",
        forge: { ...forgeBody, token },
      })
    ).body.project;
    // An edit of the forge keeps the stored secret by reading it first; FerretDB v1 also rewrites
    // the whole document on each update. Unlocked, an edit here wrote the old secret back.
    for (const round of [1, 2, 3, 4, 5]) {
      const [made] = await Promise.all([
        user.post(`/api/projects/${project._id}/forge-events/secret`),
        ...[0, 1, 2, 3, 4, 5, 6, 7].map((index) =>
          user.patch(
            `/api/projects/${project._id}`,
            index % 2 ? { name: `Engine ${index}` } : { forge: forgeBody },
          ),
        ),
      ]);
      expect(made.status).toBe(201);
      const body = JSON.stringify({
        action: "created",
        issue,
        comment: { id: round, body: "@gadget please", html_url: "https://x" },
        sender: { login: "rex", id: 2 },
      });
      const answer = await fetch(made.body.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "issue_comment",
          "x-github-delivery": `s-${round}`,
          "x-hub-signature-256": `sha256=${forgeSignature(made.body.secret, body)}`,
        },
        body,
      });
      expect({ round, status: answer.status }).toEqual({ round, status: 200 });
      expect(await answer.json()).toEqual({ ignored: "@rex has no write access to ada/engine" });
    }
    const stored = (await user.get("/api/projects")).body.projects[0];
    expect(stored.name).toMatch(/^Engine \d$/);
    expect(stored.forge).toMatchObject({ kind: "github", events: { enabled: true } });
  });
});

// Pull requests on a real Gitea: a real drone pushes each turn's commit over HTTP with the
// machine's own credentials and opens the session's pull request through Gitea's API; a later turn
// updates it (Gitea answers the update with 201), a pull request a person opened for the branch is
// found and linked (Gitea's 409), a closed one is left alone and a new one opened and linked. A
// wrong token, a reader's token and a wrong API URL are each refused in words naming Gitea.
import { sessionBranch } from "@gadget/protocol";
import { openOrUpdatePullRequest } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GiteaStage, startGiteaStage } from "./gitea-stage.ts";

interface GiteaPull {
  number: number;
  title: string;
  body: string;
  state: string;
  html_url: string;
  head: { ref: string };
}

let stage: GiteaStage;
beforeAll(async () => {
  stage = await startGiteaStage("gitea_pull_requests");
});
afterAll(async () => {
  await stage?.stop();
});

async function pull(fullName: string, number: number): Promise<GiteaPull> {
  return (await stage.gitea.api<GiteaPull>("GET", `/repos/${fullName}/pulls/${number}`)).body;
}

async function openPulls(fullName: string): Promise<GiteaPull[]> {
  return (await stage.gitea.api<GiteaPull[]>("GET", `/repos/${fullName}/pulls?state=open`)).body;
}

describe("pull requests on a real Gitea", { timeout: 180_000 }, () => {
  it("a turn opens the session's pull request, the next updates it, and after it is closed a new one is opened and linked", async () => {
    const { user } = stage;
    const { repository, projectId } = await stage.project("signup");
    const session = (await user.post(`/api/projects/${projectId}/sessions`, { name: "Signup" }))
      .body.session;
    const branch = sessionBranch("gadget/", session);

    const first = await stage.runTurn(session._id, "Write the signup page", "signup.txt");
    expect(first.turn.status).toBe("completed");
    const [opened] = await openPulls(repository.fullName);
    expect(opened).toMatchObject({ title: "Write the signup page", head: { ref: branch } });
    expect(first.turn.delivery).toMatchObject({
      branch,
      pullRequestUrl: opened?.html_url,
      error: null,
    });

    const second = await stage.runTurn(session._id, "Add a signup test", "signup.test.txt");
    expect(second.turn.delivery).toMatchObject({ pullRequestUrl: opened?.html_url, error: null });
    expect((await pull(repository.fullName, opened?.number ?? 0)).body).toBe(
      'Opened by Gadget Code for the session "Signup".\n\nTurns:\n1. Write the signup page\n2. Add a signup test',
    );

    // A person closes it: the next turn leaves it alone and opens a new one.
    const closed = await stage.gitea.api(
      "PATCH",
      `/repos/${repository.fullName}/pulls/${opened?.number}`,
      { body: { state: "closed" } },
    );
    expect(closed.status).toBe(201);
    const third = await stage.runTurn(session._id, "Check the email field", "email.txt");
    const [reopened] = await openPulls(repository.fullName);
    expect(reopened?.number).not.toBe(opened?.number);
    expect(reopened?.head.ref).toBe(branch);
    expect(third.turn.delivery).toMatchObject({ pullRequestUrl: reopened?.html_url, error: null });
    expect((await pull(repository.fullName, opened?.number ?? 0)).body).not.toContain("email");
    const detail = (await user.get(`/api/sessions/${session._id}`)).body.session;
    expect(detail.pullRequest).toEqual({ url: reopened?.html_url, number: reopened?.number });
  });

  it("links a pull request a person opened for the session's branch, and later turns update it", async () => {
    const { user, gitea } = stage;
    const { repository, projectId } = await stage.project("login");
    // Pushing only at first: the person opens the pull request.
    await user.patch(`/api/projects/${projectId}`, { delivery: "branch" });
    const session = (await user.post(`/api/projects/${projectId}/sessions`, { name: "Login" })).body
      .session;
    const branch = sessionBranch("gadget/", session);
    const first = await stage.runTurn(session._id, "Fix the login", "login.txt");
    await gitea.waitForBranch(repository, branch, { sha: first.turn.delivery.commit });
    const person = await gitea.api<GiteaPull>("POST", `/repos/${repository.fullName}/pulls`, {
      body: { head: branch, base: "main", title: "Login fix (by hand)", body: "Mine." },
    });
    expect(person.status).toBe(201);

    await user.patch(`/api/projects/${projectId}`, { delivery: "pull-request" });
    const delivered = await user.post(`/api/sessions/${session._id}/deliver`);
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(202);
    expect(delivered.body.delivery.error).toBeUndefined();
    expect(delivered.body.delivery.pullRequest).toEqual({
      url: person.body.html_url,
      number: person.body.number,
    });

    const second = await stage.runTurn(session._id, "Add a login test", "login.test.txt");
    expect(second.turn.delivery).toMatchObject({
      pullRequestUrl: person.body.html_url,
      error: null,
    });
    expect(await openPulls(repository.fullName)).toHaveLength(1);
    expect((await pull(repository.fullName, person.body.number)).body).toContain(
      "2. Add a login test",
    );
  });

  it("names Gitea when it refuses a wrong token, a reader's token, a wrong API URL or a missing branch", async () => {
    const { gitea } = stage;
    const repository = await gitea.createRepository("guarded");
    const reader = await gitea.createUser("reader");
    await gitea.addCollaborator(repository, reader, "read");
    // A branch with a change, and its pull request opened by the owner.
    const branched = await gitea.api("POST", `/repos/${repository.fullName}/contents/notes.txt`, {
      body: { content: Buffer.from("notes\n").toString("base64"), new_branch: "feature" },
    });
    expect(branched.status).toBe(201);
    const opened = await gitea.api<GiteaPull>("POST", `/repos/${repository.fullName}/pulls`, {
      body: { head: "feature", base: "main", title: "Notes" },
    });
    expect(opened.status).toBe(201);
    const options = {
      gitUrl: repository.cloneUrl,
      head: "feature",
      base: "main",
      title: "Notes",
      body: "Updated",
    };
    const wrong = await openOrUpdatePullRequest({
      ...options,
      forge: { kind: "gitea", apiUrl: gitea.apiUrl, token: "not-a-token" },
    });
    expect(wrong.error).toBe(`Gitea refused the token (401) for ${repository.fullName}`);
    const read = await openOrUpdatePullRequest({
      ...options,
      existing: { url: opened.body.html_url, number: opened.body.number },
      forge: { kind: "gitea", apiUrl: gitea.apiUrl, token: reader.token },
    });
    expect(read.error).toMatch(
      new RegExp(`^Gitea denied the token access \\(403\\) to ${repository.fullName}`),
    );
    expect((await pull(repository.fullName, opened.body.number)).body).toBe("");
    const nowhere = await openOrUpdatePullRequest({
      ...options,
      forge: { kind: "gitea", apiUrl: `${gitea.url}/api/v3`, token: stage.bot.token },
    });
    expect(nowhere.error).toBe(
      `Gitea found no repository ${repository.fullName} (404): check the forge's API URL and that the token may see it`,
    );
    const missing = await openOrUpdatePullRequest({
      ...options,
      head: "never-pushed",
      forge: { kind: "gitea", apiUrl: gitea.apiUrl, token: gitea.admin.token },
      branchWaitMs: 500,
    });
    expect(missing.error).toBe(`Gitea found no branch never-pushed in ${repository.fullName}`);
    for (const outcome of [wrong, read, nowhere, missing]) {
      expect(JSON.stringify(outcome)).not.toContain(stage.bot.token);
      expect(JSON.stringify(outcome)).not.toContain(reader.token);
    }
  });
});

// The drone's forge client against the loopback stand-in of GitHub's and GitLab's REST APIs:
// opening, updating, finding an open one made elsewhere, and the words for a refused token.
import { once } from "node:events";
import { type AddressInfo, createServer } from "node:net";
import { type ForgeStandIn, startForgeStandIn } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openOrUpdatePullRequest, type PullRequestOptions } from "./pull-request.ts";

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const token = "glpat-standin-token-0123456789";
let forge: ForgeStandIn;

beforeAll(async () => {
  forge = await startForgeStandIn({ token, repositories: ["ada/engine", "acme/web/app"] });
});
afterAll(async () => {
  await forge?.stop();
});

function github(overrides: Partial<PullRequestOptions> = {}): PullRequestOptions {
  return {
    forge: { kind: "github", apiUrl: forge.githubApiUrl, token },
    gitUrl: "git@github.com:ada/engine.git",
    head: "gadget/fix-login-a1b2c3",
    base: "main",
    title: "Fix the login",
    body: "Turns:\n1. Fix the login",
    ...overrides,
  };
}

function gitlab(overrides: Partial<PullRequestOptions> = {}): PullRequestOptions {
  return {
    ...github(),
    forge: { kind: "gitlab", apiUrl: forge.gitlabApiUrl, token },
    gitUrl: "https://gitlab.example.org/acme/web/app.git",
    ...overrides,
  };
}

describe("pull requests on GitHub", () => {
  it("opens one, then updates its body for a later turn", async () => {
    const opened = await openOrUpdatePullRequest(github());
    expect(opened).toEqual({
      opened: true,
      pullRequest: { url: `${forge.url}/ada/engine/pull/1`, number: 1 },
    });
    const updated = await openOrUpdatePullRequest(
      github({ body: "Turns:\n1. Fix the login\n2. Add a test", existing: opened.pullRequest }),
    );
    expect(updated).toEqual({ opened: false, pullRequest: opened.pullRequest });
    expect(forge.pullRequests().filter((pull) => pull.repository === "ada/engine")).toEqual([
      {
        repository: "ada/engine",
        number: 1,
        title: "Fix the login",
        body: "Turns:\n1. Fix the login\n2. Add a test",
        head: "gadget/fix-login-a1b2c3",
        base: "main",
        state: "open",
      },
    ]);
  });

  it("finds the branch's open pull request when GitHub says one already exists", async () => {
    const options = github({ head: "gadget/signup-d4e5f6" });
    const first = await openOrUpdatePullRequest(options);
    const before = forge.requests().length;
    // The server never heard of it (say, the turn's answer was lost): GitHub answers 422.
    const again = await openOrUpdatePullRequest({ ...options, body: "Turns:\n1. Again" });
    expect(again).toEqual({ opened: false, pullRequest: first.pullRequest });
    expect(
      forge
        .requests()
        .slice(before)
        .map((request) => `${request.method} ${request.status}`),
    ).toEqual(["POST 422", "GET 200", "PATCH 200"]);
    expect(forge.pullRequests().find((pull) => pull.head === options.head)?.body).toBe(
      "Turns:\n1. Again",
    );
  });

  it("checks the head of each listed pull request, not trusting the forge's head filter", async () => {
    const careless = await startForgeStandIn({
      token,
      repositories: ["ada/engine"],
      ignoreHeadFilter: true,
    });
    try {
      const options = (head: string) =>
        github({ head, forge: { kind: "github", apiUrl: careless.githubApiUrl, token } });
      const other = await openOrUpdatePullRequest(options("gadget/other-111111"));
      const mine = await openOrUpdatePullRequest(options("gadget/mine-222222"));
      // Asked again without knowing it: 422, then the list (both, its own first as GitHub lists the
      // newest first; the other would come first were it newer), then its own.
      const found = await openOrUpdatePullRequest({
        ...options("gadget/mine-222222"),
        body: "Found",
      });
      expect(found).toEqual({ opened: false, pullRequest: mine.pullRequest });
      expect(careless.pullRequests().map((pull) => [pull.number, pull.body])).toEqual([
        [other.pullRequest?.number, "Turns:\n1. Fix the login"],
        [mine.pullRequest?.number, "Found"],
      ]);
    } finally {
      await careless.stop();
    }
  });

  it("opens a new pull request when the session's one was closed", async () => {
    const options = github({ head: "gadget/pricing-0a0b0c" });
    const first = await openOrUpdatePullRequest(options);
    forge.close("ada/engine", first.pullRequest?.number ?? 0);
    const next = await openOrUpdatePullRequest({
      ...options,
      body: "Turns:\n1. Later",
      existing: first.pullRequest,
    });
    expect(next.opened).toBe(true);
    expect(next.pullRequest?.number).toBe((first.pullRequest?.number ?? 0) + 1);
    // The closed one is left as it was.
    const closed = forge.pullRequests().find((pull) => pull.number === first.pullRequest?.number);
    expect(closed).toMatchObject({ state: "closed", body: options.body });
  });

  it("says in words why GitHub refused, never with the token", async () => {
    const wrong = await openOrUpdatePullRequest(
      github({ forge: { kind: "github", apiUrl: forge.githubApiUrl, token: "ghp_wrong" } }),
    );
    expect(wrong).toEqual({ error: "GitHub refused the token (401) for ada/engine" });
    const missing = await openOrUpdatePullRequest(
      github({ gitUrl: "https://github.com/ada/nothing" }),
    );
    expect(missing.error).toBe(
      "GitHub found no repository ada/nothing (404): check the forge's API URL and that the token may see it",
    );
    const same = await openOrUpdatePullRequest(github({ head: "main" }));
    expect(same.error).toBe(
      "GitHub refused the pull request (422) for ada/engine: Validation Failed; No commits between main and main",
    );
    const nowhere = `http://127.0.0.1:${await closedPort()}`;
    const closed = await openOrUpdatePullRequest(
      github({ forge: { kind: "github", apiUrl: nowhere, token } }),
    );
    expect(closed.error).toBe(`could not reach GitHub at ${nowhere}: ECONNREFUSED`);
    for (const outcome of [wrong, missing, same, closed]) {
      expect(JSON.stringify(outcome)).not.toContain(token);
    }
  });
});

describe("merge requests on GitLab", () => {
  it("opens one in a nested group's project, updates it, and finds it after a 409", async () => {
    const opened = await openOrUpdatePullRequest(gitlab());
    expect(opened).toEqual({
      opened: true,
      pullRequest: { url: `${forge.url}/acme/web/app/-/merge_requests/1`, number: 1 },
    });
    const updated = await openOrUpdatePullRequest(
      gitlab({ body: "Turns:\n1. Fix\n2. Test", existing: opened.pullRequest }),
    );
    expect(updated).toEqual({ opened: false, pullRequest: opened.pullRequest });
    const before = forge.requests().length;
    const found = await openOrUpdatePullRequest(gitlab({ body: "Turns:\n1. Found" }));
    expect(found).toEqual({ opened: false, pullRequest: opened.pullRequest });
    expect(
      forge
        .requests()
        .slice(before)
        .map((request) => `${request.method} ${request.path} ${request.status}`),
    ).toEqual([
      "POST /api/v4/projects/acme%2Fweb%2Fapp/merge_requests 409",
      "GET /api/v4/projects/acme%2Fweb%2Fapp/merge_requests 200",
      "PUT /api/v4/projects/acme%2Fweb%2Fapp/merge_requests/1 200",
    ]);
    expect(forge.pullRequests().find((pull) => pull.repository === "acme/web/app")?.body).toBe(
      "Turns:\n1. Found",
    );
  });

  it("says GitLab refused a wrong token, or the merge request, in GitLab's words", async () => {
    const wrong = await openOrUpdatePullRequest(
      gitlab({ forge: { kind: "gitlab", apiUrl: forge.gitlabApiUrl, token: "glpat-wrong" } }),
    );
    expect(wrong).toEqual({ error: "GitLab refused the token (401) for acme/web/app" });
    const same = await openOrUpdatePullRequest(gitlab({ head: "main" }));
    expect(same).toEqual({
      error:
        "GitLab refused the merge request (422) for acme/web/app: You can't use same project/branch for source and target",
    });
  });

  it("opens a second merge request of the branch into another target, as GitLab allows", async () => {
    const options = gitlab({ head: "gadget/two-bases-0d0e0f" });
    const first = await openOrUpdatePullRequest(options);
    const other = await openOrUpdatePullRequest({ ...options, base: "stable" });
    expect(other.opened).toBe(true);
    expect(other.pullRequest?.number).not.toBe(first.pullRequest?.number);
    // Asked again for the first target: GitLab's 409, then the one into main is found and updated.
    const again = await openOrUpdatePullRequest({ ...options, body: "Turns:\n1. Again" });
    expect(again).toEqual({ opened: false, pullRequest: first.pullRequest });
  });
});

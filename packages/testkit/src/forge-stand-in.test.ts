// The forge stand-in answers as the recorded GitHub and GitLab responses its files cite: the
// statuses, bodies and headers a client reads, in the cases where our first reading of the APIs
// was wrong (a second pull request of a branch into another base, list order, Location, the
// User-Agent refusal's text, GitLab's conflict only on the same source and target).
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ForgeStandIn, startForgeStandIn } from "./forge-stand-in.ts";

const token = "ghp_standin_token";
let forge: ForgeStandIn;

beforeAll(async () => {
  forge = await startForgeStandIn({ token, repositories: ["ada/app", "acme/web"] });
});
afterAll(async () => {
  await forge?.stop();
});

async function call(
  method: string,
  url: string,
  body?: object,
  headers: Record<string, string> = { authorization: `Bearer ${token}`, "user-agent": "test" },
) {
  const response = await fetch(url, {
    method,
    headers: { ...headers, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    location: response.headers.get("location"),
    text,
    json: response.headers.get("content-type")?.startsWith("application/json")
      ? (JSON.parse(text) as unknown)
      : null,
  };
}

describe("the stand-in's GitHub", () => {
  const pulls = () => `${forge.githubApiUrl}/repos/ada/app/pulls`;
  const open = (head: string, base: string) => call("POST", pulls(), { title: head, head, base });

  it("answers 201 with the pull request's API address in Location", async () => {
    const created = await open("feature", "main");
    expect(created.status).toBe(201);
    const number = (created.json as { number: number }).number;
    expect(created.location).toBe(`${forge.githubApiUrl}/repos/ada/app/pulls/${number}`);
  });

  it("refuses a second open pull request of the same head and base, not into another base", async () => {
    await open("twice", "main");
    const again = await open("twice", "main");
    expect(again.status).toBe(422);
    expect(again.json).toMatchObject({
      message: "Validation Failed",
      errors: [
        {
          resource: "PullRequest",
          code: "custom",
          message: "A pull request already exists for ada:twice.",
        },
      ],
    });
    expect((await open("twice", "release")).status).toBe(201);
  });

  it("lists newest first, narrowed by head and base", async () => {
    await open("listed", "main");
    await open("listed", "release");
    const all = await call("GET", `${pulls()}?state=open`);
    const numbers = (all.json as Array<{ number: number }>).map((pull) => pull.number);
    expect(numbers).toEqual([...numbers].sort((a, b) => b - a));
    const mine = await call("GET", `${pulls()}?state=open&head=ada:listed&base=release`);
    expect(
      (mine.json as Array<{ head: { ref: string }; base: { ref: string } }>).map((pull) => [
        pull.head.ref,
        pull.base.ref,
      ]),
    ).toEqual([["listed", "release"]]);
  });

  it("refuses a missing User-Agent in text, not JSON, and a wrong token with Bad credentials", async () => {
    // fetch always sends one: node:http sends none unless told.
    const agentless = await new Promise<{ status: number; type: string; text: string }>(
      (resolve, reject) => {
        request(pulls(), { headers: { authorization: `Bearer ${token}` } }, (response) => {
          let text = "";
          response.on("data", (chunk) => {
            text += String(chunk);
          });
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 0,
              type: response.headers["content-type"] ?? "",
              text,
            }),
          );
        })
          .on("error", reject)
          .end();
      },
    );
    expect([agentless.status, agentless.type]).toEqual([403, "text/html"]);
    expect(agentless.text).toMatch(/^Request forbidden by administrative rules\./);
    const wrong = await call("GET", pulls(), undefined, {
      authorization: "Bearer nope",
      "user-agent": "test",
    });
    expect([wrong.status, wrong.json]).toEqual([
      401,
      {
        message: "Bad credentials",
        documentation_url: "https://docs.github.com/rest",
        status: "401",
      },
    ]);
  });

  it("refuses a PATCH to a base that does not exist, as GitHub words it", async () => {
    const gone = await startForgeStandIn({
      token,
      repositories: ["ada/app"],
      branchExists: (_repository, branch) => branch !== "gone",
    });
    try {
      const created = await call("POST", `${gone.githubApiUrl}/repos/ada/app/pulls`, {
        title: "t",
        head: "feature",
        base: "main",
      });
      const number = (created.json as { number: number }).number;
      const moved = await call("PATCH", `${gone.githubApiUrl}/repos/ada/app/pulls/${number}`, {
        base: "gone",
      });
      expect(moved.status).toBe(422);
      expect(moved.json).toMatchObject({
        errors: [{ message: "Proposed base branch 'gone' was not found", field: "base" }],
      });
    } finally {
      await gone.stop();
    }
  });
});

describe("the stand-in's GitLab", () => {
  const requests = () => `${forge.gitlabApiUrl}/projects/acme%2Fweb/merge_requests`;
  const headers = { "private-token": token };
  const open = (head: string, base: string) =>
    call("POST", requests(), { title: head, source_branch: head, target_branch: base }, headers);

  it("conflicts only with an open merge request of the same source and target branches", async () => {
    const first = await open("topic", "main");
    expect([first.status, first.location]).toEqual([201, null]);
    const iid = (first.json as { iid: number }).iid;
    const again = await open("topic", "main");
    expect([again.status, again.json]).toEqual([
      409,
      { message: [`Another open merge request already exists for this source branch: !${iid}`] },
    ]);
    expect((await open("topic", "stable")).status).toBe(201);
    const same = await open("main", "main");
    expect([same.status, same.json]).toEqual([
      422,
      { message: ["You can't use same project/branch for source and target"] },
    ]);
  });

  it("names what is missing in Grape's words and order", async () => {
    const missing = await call("POST", requests(), { description: "x" }, headers);
    expect([missing.status, missing.json]).toEqual([
      400,
      { error: "title is missing, source_branch is missing, target_branch is missing" },
    ]);
  });

  it("refuses to reopen a merge request when its branches have another open one", async () => {
    const closed = await open("reopened", "main");
    const iid = (closed.json as { iid: number }).iid;
    await call("PUT", `${requests()}/${iid}`, { state_event: "close" }, headers);
    await open("reopened", "main");
    const reopen = await call("PUT", `${requests()}/${iid}`, { state_event: "reopen" }, headers);
    expect(reopen.status).toBe(409);
    const nothing = await call("PUT", `${requests()}/${iid}`, {}, headers);
    expect(nothing.status).toBe(400);
  });

  it("answers GitLab's 401 and 404 words", async () => {
    expect((await call("GET", requests(), undefined, { "private-token": "no" })).json).toEqual({
      message: "401 Unauthorized",
    });
    const project = await call(
      "GET",
      `${forge.gitlabApiUrl}/projects/acme%2Fnone/merge_requests`,
      undefined,
      headers,
    );
    expect([project.status, project.json]).toEqual([404, { message: "404 Project Not Found" }]);
    const request = await call("GET", `${requests()}/999`, undefined, headers);
    expect([request.status, request.json]).toEqual([404, { message: "404 Not found" }]);
  });
});

// Finding 10 of the attacker's pass, quotas and pagination: one account could pile up turns,
// projects, providers and registration tokens without end, and every list came back whole.
// Attacked over HTTP as a signed-up user.
import { describe, expect, it } from "vitest";
import { ApiClient, setupWorkspace, signup } from "../../src/testing/api-client.ts";
import { useTestServer } from "../../src/testing/use-test-server.ts";

const quotas = { queuedTurns: 2, projects: 5, providers: 2, registrationTokens: 2 };
const fixture = useTestServer({ quotas });

const project = (name: string) => ({ name, gitUrl: "https://example.com/demo.git" });
const provider = (name: string) => ({
  name,
  baseUrl: "http://127.0.0.1:9/v1",
  apiKey: "sk-test-secret-key",
  modelId: "scripted-model",
});

/** What a client sees past a quota: 429, the code, and which limit at what number. */
function expectQuota(
  answer: {
    status: number;
    body: { error?: { code: string; message: string; details?: unknown } };
  },
  quota: keyof typeof quotas,
) {
  expect(answer.status).toBe(429);
  expect(answer.body.error).toMatchObject({
    code: "quota_exceeded",
    details: { quota, limit: quotas[quota] },
  });
  expect(answer.body.error?.message).toContain(`allows ${quotas[quota]}`);
}

async function createProjects(user: ApiClient, names: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const name of names) {
    const created = await user.post("/api/projects", project(name));
    expect(created.status).toBe(201);
    ids.push(created.body.project._id);
  }
  return ids;
}

describe("finding 10: one account cannot pile things up without end", () => {
  it("a sixth project past a limit of five answers 429 naming the limit; other users are not affected", async () => {
    const hoarder = await signup(fixture.server.url, "hoarder");
    await createProjects(hoarder, ["one", "two", "three", "four", "five"]);
    expectQuota(await hoarder.post("/api/projects", project("six")), "projects");
    expect((await hoarder.get("/api/projects?limit=500")).body.projects).toHaveLength(5);
    const neighbour = await signup(fixture.server.url, "neighbour");
    expect((await neighbour.post("/api/projects", project("mine"))).status).toBe(201);
  });

  it("a third provider past a limit of two answers 429 naming the limit", async () => {
    const hoarder = await signup(fixture.server.url, "providers");
    expect((await hoarder.post("/api/providers", provider("a"))).status).toBe(201);
    expect((await hoarder.post("/api/providers", provider("b"))).status).toBe(201);
    expectQuota(await hoarder.post("/api/providers", provider("c")), "providers");
    expect((await hoarder.get("/api/providers")).body.providers).toHaveLength(2);
  });

  it("registration tokens past the limit answer 429, and registering a drone with one frees its slot", async () => {
    const hoarder = await signup(fixture.server.url, "tokens");
    const first = await hoarder.post("/api/drones/registration-tokens");
    expect(first.status).toBe(201);
    expect((await hoarder.post("/api/drones/registration-tokens")).status).toBe(201);
    expectQuota(await hoarder.post("/api/drones/registration-tokens"), "registrationTokens");

    const registered = await new ApiClient(fixture.server.url).post("/api/drones/register", {
      token: first.body.token,
      name: "spent-a-token",
    });
    expect(registered.status).toBe(201);
    expect((await hoarder.post("/api/drones/registration-tokens")).status).toBe(201);
    expectQuota(await hoarder.post("/api/drones/registration-tokens"), "registrationTokens");
  });

  it("queued turns past the limit answer 429, and cancelling one makes room for the next", async () => {
    const hoarder = await signup(fixture.server.url, "turns");
    const workspace = await setupWorkspace(hoarder);
    const queue = () =>
      hoarder.post(`/api/sessions/${workspace.sessionId}/turns`, {
        prompt: "no drone will take this",
        providerId: workspace.providerId,
      });
    const first = await queue();
    expect(first.status).toBe(202);
    expect((await queue()).status).toBe(202);
    expectQuota(await queue(), "queuedTurns");

    const cancelled = await hoarder.post(`/api/turns/${first.body.turn._id}/cancel`);
    expect(cancelled.status).toBe(202);
    expect(cancelled.body.turn.status).toBe("cancelled");
    expect((await queue()).status).toBe(202);
    expectQuota(await queue(), "queuedTurns");
    const listed = (await hoarder.get(`/api/sessions/${workspace.sessionId}/turns`)).body.turns;
    expect(listed.filter((turn: { status: string }) => turn.status === "queued")).toHaveLength(2);
  });

  // Counting then creating would let a burst pass together (10 parallel POSTs with a limit of 3
  // made 9): the count and the create share a per-user lock, the queued turn a Redis script.
  it("a burst of parallel creates stays within each quota", async () => {
    const hoarder = await signup(fixture.server.url, "burst");
    const burst = (send: () => Promise<{ status: number }>) =>
      Promise.all(Array.from({ length: 10 }, send)).then((answers) =>
        answers.filter((answer) => answer.status < 300),
      );
    expect(await burst(() => hoarder.post("/api/projects", project("burst")))).toHaveLength(5);
    expect(await burst(() => hoarder.post("/api/providers", provider("burst")))).toHaveLength(2);
    expect(await burst(() => hoarder.post("/api/drones/registration-tokens"))).toHaveLength(2);
  });
});

describe("finding 10: lists come in pages", () => {
  it("walks five projects in pages of two: 2, 2, 1, in creation order, none twice, then no cursor", async () => {
    const user = await signup(fixture.server.url, "pager");
    const names = ["alpha", "bravo", "charlie", "delta", "echo"];
    const ids = await createProjects(user, names);

    const pages: Array<{ names: string[]; ids: string[] }> = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `?limit=2&cursor=${cursor}` : "?limit=2";
      const answer = await user.get(`/api/projects${query}`);
      expect(answer.status).toBe(200);
      const projects = answer.body.projects as Array<{ _id: string; name: string }>;
      pages.push({
        names: projects.map((item) => item.name),
        ids: projects.map((item) => item._id),
      });
      cursor = answer.body.nextCursor;
      if (cursor !== null) expect(cursor).toBe(projects.at(-1)?._id);
      expect(pages.length).toBeLessThanOrEqual(3);
    } while (cursor !== null);

    expect(pages.map((page) => page.names)).toEqual([
      ["alpha", "bravo"],
      ["charlie", "delta"],
      ["echo"],
    ]);
    expect(pages.flatMap((page) => page.ids)).toEqual(ids);
    // Without a limit, everything fits in the default page of 200.
    const whole = await user.get("/api/projects");
    expect(whole.body.projects).toHaveLength(5);
    expect(whole.body.nextCursor).toBeNull();
  });

  it("refuses limit 0, limit 501 and malformed cursors with 400 on every list route", async () => {
    const user = await signup(fixture.server.url, "bad-pages");
    const workspace = await setupWorkspace(user);
    const routes = [
      "/api/drones",
      "/api/providers",
      "/api/projects",
      `/api/projects/${workspace.projectId}/sessions`,
      `/api/sessions/${workspace.sessionId}/turns`,
    ];
    const bad = [
      "limit=0",
      "limit=501",
      "limit=-1",
      "limit=two",
      "cursor=not-a-cursor",
      "cursor=zzzzzzzzzzzzzzzzzzzzzzzz",
      `cursor=${"a".repeat(25)}`,
    ];
    for (const route of routes) {
      for (const query of bad) {
        const answer = await user.get(`${route}?${query}`);
        expect({ route, query, status: answer.status }).toEqual({ route, query, status: 400 });
        expect(answer.body.error.code).toBe("validation_failed");
      }
      const widest = await user.get(`${route}?limit=500`);
      expect(widest.status).toBe(200);
      expect(widest.body.nextCursor).toBeNull();
    }
  });

  it("another user's cursor shows only the caller's own projects", async () => {
    const owner = await signup(fixture.server.url, "cursor-owner");
    const prober = await signup(fixture.server.url, "cursor-prober");
    const [early] = await createProjects(prober, ["prober-early"]);
    const ownerIds = await createProjects(owner, ["o1", "o2", "o3"]);
    const [late] = await createProjects(prober, ["prober-late"]);

    const ownerPage = await owner.get("/api/projects?limit=1");
    const stolenCursor = ownerPage.body.nextCursor as string;
    expect(stolenCursor).toBe(ownerIds[0]);

    const probed = await prober.get(`/api/projects?limit=1&cursor=${stolenCursor}`);
    expect(probed.status).toBe(200);
    expect(probed.body.projects.map((item: { _id: string }) => item._id)).toEqual([late]);
    expect(probed.body.nextCursor).toBeNull();
    expect(JSON.stringify(probed.body)).not.toMatch(/"o[123]"/);
    for (const id of ownerIds) expect(JSON.stringify(probed.body)).not.toContain(id);
    // The prober's own list, walked from the start, is just its two projects.
    const own = await prober.get("/api/projects");
    expect(own.body.projects.map((item: { _id: string }) => item._id)).toEqual([early, late]);
  });
});

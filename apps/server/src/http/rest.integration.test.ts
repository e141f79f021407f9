// The REST flows of docs/reference.md over real HTTP: accounts, providers, projects, sessions, turns and errors.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { GadgetServer } from "../server.ts";
import { ApiClient, setupWorkspace, signup } from "../testing/api-client.ts";
import { startTestServer } from "../testing/test-server.ts";

let server: GadgetServer;

beforeAll(async () => {
  server = await startTestServer(
    {
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      loginRateLimit: { max: 3, windowMs: 60_000 },
    },
    undefined,
  );
});
afterAll(async () => {
  await server?.context.models.User.db.dropDatabase();
  await server?.close();
});

describe("accounts", () => {
  it("signs up, logs in and answers /api/me with the token's user", async () => {
    const anonymous = new ApiClient(server.url);
    const signedUp = await anonymous.post("/api/auth/signup", {
      email: "Ada@Example.com",
      password: "correct horse battery",
      name: "Ada",
    });
    expect(signedUp.status).toBe(201);
    expect(signedUp.body.user).toMatchObject({ email: "ada@example.com", name: "Ada" });
    expect(signedUp.body.user.passwordHash).toBeUndefined();

    const login = await anonymous.post("/api/auth/login", {
      email: "ada@example.com",
      password: "correct horse battery",
    });
    expect(login.status).toBe(200);
    const me = await new ApiClient(server.url, login.body.token).get("/api/me");
    expect(me.status).toBe(200);
    expect(me.body.user.email).toBe("ada@example.com");

    const stored = await server.context.models.User.findOne({ email: "ada@example.com" }).lean();
    expect(stored?.passwordHash).toMatch(/^scrypt\$/);
    expect(
      await server.context.models.ApiToken.countDocuments({ tokenHash: login.body.token }),
    ).toBe(0);
  });

  it("refuses a duplicate email, a wrong password and a missing or bad token", async () => {
    const anonymous = new ApiClient(server.url);
    const user = await signup(server.url, "dup");
    const again = await anonymous.post("/api/auth/signup", {
      email: user.email,
      password: "another password",
    });
    // The same words as any other refusal: signup does not say which emails have accounts.
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe("signup_failed");
    expect(again.body.error.message).not.toMatch(/exist|taken|already registered/i);

    const wrong = await anonymous.post("/api/auth/login", {
      email: user.email,
      password: "not the password",
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe("unauthorized");

    expect((await anonymous.get("/api/me")).status).toBe(401);
    expect((await new ApiClient(server.url, "gat_nonsense").get("/api/me")).status).toBe(401);
  });

  it("slows wrong passwords for an email with 429 and Retry-After", async () => {
    const user = await signup(server.url, "limited");
    const anonymous = new ApiClient(server.url);
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let attempt = 0; attempt < 5; attempt++) {
      const response = await anonymous.post("/api/auth/login", {
        email: user.email,
        password: "wrong password",
      });
      statuses.push(response.status);
      if (response.status === 429) retryAfter = response.headers.get("retry-after");
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect(Number(retryAfter)).toBeGreaterThan(0);
  });

  it("answers invalid bodies with 400 and field paths, and oversized bodies with 413", async () => {
    const anonymous = new ApiClient(server.url);
    const invalid = await anonymous.post("/api/auth/signup", {
      email: "not-an-email",
      password: "short",
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe("validation_failed");
    expect(invalid.body.error.details.map((issue: { path: string }) => issue.path).sort()).toEqual([
      "email",
      "password",
    ]);
    expect(invalid.body.error.message).toBe(
      "Invalid signup: email: Invalid email address; password: must be at least 8 characters",
    );
    const malformed = await anonymous.request("POST", "/api/auth/login", "{not json", {
      "content-type": "application/json",
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ error: { code: "validation_failed" } });

    const user = await signup(server.url, "big");
    const huge = await user.post("/api/projects", {
      name: "x",
      gitUrl: "y".repeat(13 * 1024 * 1024),
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe("payload_too_large");
  });

  it("answers a bad query with 400 naming it, and an id of the wrong shape with 404", async () => {
    const user = await signup(server.url, "shapes");
    const query = await user.get("/api/drones?limit=0");
    expect(query.status).toBe(400);
    expect(query.body.error).toEqual({
      code: "validation_failed",
      message: "Invalid query: limit: Too small: expected number to be >=1",
      details: [{ path: "limit", message: "Too small: expected number to be >=1" }],
    });
    const id = await user.get("/api/turns/not-an-id");
    expect(id.status).toBe(404);
    expect(id.body.error).toEqual({ code: "not_found", message: "Turn not found" });
    // An empty PATCH changes nothing and answers the object.
    const { projectId } = await setupWorkspace(user);
    const untouched = await user.request<{ project: { _id: string } }>(
      "PATCH",
      `/api/projects/${projectId.toUpperCase()}`,
    );
    expect(untouched.status).toBe(200);
    expect(untouched.body.project._id).toBe(projectId);
  });

  it("answers unknown routes with the error shape", async () => {
    const response = await new ApiClient(server.url).get("/api/nothing-here");
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe("not_found");
  });
});

describe("providers, projects, sessions, turns", () => {
  it("never returns a provider's apiKey and stores it only encrypted", async () => {
    const user = await signup(server.url, "provider");
    const created = await user.post("/api/providers", {
      name: "OpenAI",
      baseUrl: "https://api.example.com/v1",
      apiKey: "sk-very-secret",
      modelId: "gpt-test",
      params: { temperature: 0.2 },
      pricing: { inputPerMTok: 1, outputPerMTok: 2 },
    });
    expect(created.status).toBe(201);
    expect(created.body.provider).toMatchObject({
      name: "OpenAI",
      hasApiKey: true,
      modelId: "gpt-test",
    });
    expect(JSON.stringify(created.body)).not.toContain("sk-very-secret");
    const listed = await user.get("/api/providers");
    expect(listed.body.providers).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain("sk-very-secret");
    const stored = await server.context.models.Provider.findById(created.body.provider._id).lean();
    expect(stored?.apiKeyEncrypted).toMatch(/^v1:/);
    expect(JSON.stringify(stored)).not.toContain("sk-very-secret");
    expect(server.context.secretBox.open(stored!.apiKeyEncrypted)).toBe("sk-very-secret");
  });

  it("creates projects with unique slugs, sessions with defaults, and queued turns", async () => {
    const user = await signup(server.url, "projects");
    const first = await user.post("/api/projects", {
      name: "My Cool App!",
      gitUrl: "https://example.com/a.git",
    });
    const second = await user.post("/api/projects", {
      name: "My Cool App!",
      gitUrl: "https://example.com/a.git",
    });
    expect(first.status).toBe(201);
    expect(first.body.project.slug).toBe("my-cool-app");
    expect(second.body.project.slug).toBe("my-cool-app-2");
    expect((await user.get("/api/projects")).body.projects).toHaveLength(2);

    const session = await user.post(`/api/projects/${first.body.project._id}/sessions`, {
      name: "Fix bugs",
    });
    expect(session.status).toBe(201);
    expect(session.body.session).toMatchObject({
      name: "Fix bugs",
      mode: "agent",
      approval: "auto",
    });
    expect(
      (await user.get(`/api/projects/${first.body.project._id}/sessions`)).body.sessions,
    ).toHaveLength(1);

    const { providerId, sessionId } = await setupWorkspace(user);
    const turn = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Say hi",
      providerId,
    });
    expect(turn.status).toBe(202);
    expect(turn.body.turn).toMatchObject({
      status: "queued",
      prompt: "Say hi",
      llm: "scripted-model",
      mode: "agent",
      drone: null,
      stats: { toolCallCount: 0, durationLabel: "pending" },
    });
    const turnId = turn.body.turn._id;
    expect((await user.get(`/api/turns/${turnId}`)).body.turn.status).toBe("queued");
    const listed = await user.get(`/api/sessions/${sessionId}/turns`);
    expect(listed.body.turns.map((item: { _id: string }) => item._id)).toEqual([turnId]);
    const events = await user.get(`/api/turns/${turnId}/events`);
    expect(events.body.events).toMatchObject([{ seq: 1, type: "queued" }]);

    const badTurn = await user.post(`/api/sessions/${sessionId}/turns`, { prompt: "", providerId });
    expect(badTurn.status).toBe(400);
    expect(badTurn.body.error.details[0].path).toBe("prompt");
    const unknownProvider = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "hi",
      providerId: "0123456789abcdef01234567",
    });
    expect(unknownProvider.status).toBe(404);
  });

  it("changes a project's network policy and verification with PATCH, validated and per user", async () => {
    const user = await signup(server.url, "patch");
    const created = await user.post("/api/projects", {
      name: "Sandboxed",
      gitUrl: "https://example.com/s.git",
    });
    expect(created.body.project).toMatchObject({
      network: "none",
      allowedHosts: [],
      branchPrefix: "gadget/",
      delivery: "workspace",
      commitAuthor: null,
    });
    const id = created.body.project._id;

    const patched = await user.patch(`/api/projects/${id}`, {
      network: "allowlist",
      allowedHosts: [
        "Registry.NPMJS.org",
        "*.github.com:443",
        "127.0.0.1:4873",
        "registry.npmjs.org",
      ],
      verifyCommands: ["npm test"],
      branchPrefix: "ai/work/",
    });
    expect(patched.status).toBe(200);
    expect(patched.body.project).toMatchObject({
      name: "Sandboxed",
      branchPrefix: "ai/work/",
      network: "allowlist",
      allowedHosts: ["registry.npmjs.org", "*.github.com:443", "127.0.0.1:4873"],
      verifyCommands: ["npm test"],
    });
    const listed = (await user.get("/api/projects")).body.projects[0];
    expect(listed).toMatchObject({ network: "allowlist", verifyCommands: ["npm test"] });

    for (const [body, field] of [
      [{ network: "everything" }, "network"],
      [{ allowedHosts: ["http://evil.example/path"] }, "allowedHosts.0"],
      [{ allowedHosts: ["example.com:99999"] }, "allowedHosts.0"],
      [
        { allowedHosts: Array.from({ length: 101 }, (_, index) => `h${index}.example`) },
        "allowedHosts",
      ],
      [{ slug: "renamed" }, "(root)"],
      [{ branchPrefix: "../escape/" }, "branchPrefix"],
      [{ branchPrefix: "-x" }, "branchPrefix"],
      [{ delivery: "email" }, "delivery"],
      [{ commitAuthor: { name: "Ada", email: "not an email" } }, "commitAuthor.email"],
      [{ name: "" }, "name"],
    ] as const) {
      const refused = await user.patch(`/api/projects/${id}`, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.error.details.map((issue: { path: string }) => issue.path)).toContain(
        field,
      );
    }
    expect((await user.get("/api/projects")).body.projects[0].network).toBe("allowlist");

    // Delivery and the commit author; null clears the author again.
    const delivering = await user.patch(`/api/projects/${id}`, {
      delivery: "pull-request",
      commitAuthor: { name: "Ada Lovelace", email: "ada@example.com" },
    });
    expect(delivering.body.project).toMatchObject({
      delivery: "pull-request",
      commitAuthor: { name: "Ada Lovelace", email: "ada@example.com" },
    });
    const cleared = await user.patch(`/api/projects/${id}`, { commitAuthor: null });
    expect(cleared.body.project).toMatchObject({ delivery: "pull-request", commitAuthor: null });

    const stranger = await signup(server.url, "patch-stranger");
    const foreign = await stranger.patch(`/api/projects/${id}`, { network: "open" });
    expect(foreign.status).toBe(404);
    expect((await user.get("/api/projects")).body.projects[0].network).toBe("allowlist");
  });

  it("cancels a queued turn at once and resumes only interrupted or failed turns", async () => {
    const user = await signup(server.url, "cancel");
    const { providerId, sessionId } = await setupWorkspace(user);
    const turn = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Wait",
      providerId,
    });
    const cancelled = await user.post(`/api/turns/${turn.body.turn._id}/cancel`);
    expect(cancelled.status).toBe(202);
    expect(cancelled.body.turn).toMatchObject({ status: "cancelled", exitReason: "cancelled" });
    const events = await user.get(`/api/turns/${turn.body.turn._id}/events`);
    expect(events.body.events.map((event: { type: string }) => event.type)).toEqual([
      "queued",
      "status",
      "done",
    ]);
    const resume = await user.post(`/api/turns/${turn.body.turn._id}/resume`);
    expect(resume.status).toBe(409);
  });
});

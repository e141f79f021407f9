// A project's MCP servers over real HTTP and a real database: env values and bearer tokens sealed
// at rest, never answered, kept when a PATCH leaves them out, refused with precise 400s, and opened
// only in the work orders a drone receives.
import { agentEvent } from "@gadget/protocol";
import { Types } from "mongoose";
import { describe, expect, it } from "vitest";
import { registerDrone, setupWorkspace, signup, waitFor } from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();
const envSecret = "ghp_mcpEnvSecretNeverShown0123";
const bearer = "mcp-bearer-never-shown-4567";

describe("a project's MCP servers", () => {
  it("seals env values and bearer tokens, answers only their names, and keeps what a PATCH leaves out", async () => {
    const user = await signup(fixture.server.url, "mcp-servers");
    const { projectId } = await setupWorkspace(user);
    const set = await user.patch(`/api/projects/${projectId}`, {
      mcpServers: [
        {
          name: "github",
          command: ["node", "tools/github-mcp.mjs", "--stdio"],
          env: { GITHUB_TOKEN: envSecret, LOG_LEVEL: "warn" },
          tools: ["create_issue"],
        },
        { name: "docs", url: "https://mcp.example.com/mcp", bearerToken: bearer },
      ],
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.project.mcpServers).toEqual([
      {
        name: "github",
        command: ["node", "tools/github-mcp.mjs", "--stdio"],
        envKeys: ["GITHUB_TOKEN", "LOG_LEVEL"],
        hasBearerToken: false,
        tools: ["create_issue"],
      },
      { name: "docs", url: "https://mcp.example.com/mcp", envKeys: [], hasBearerToken: true },
    ]);
    for (const answer of [set.body, (await user.get("/api/projects")).body]) {
      expect(JSON.stringify(answer)).not.toContain(envSecret);
      expect(JSON.stringify(answer)).not.toContain(bearer);
    }
    const { models, secretBox } = fixture.server.context;
    const raw = await models.Project.collection.findOne({ _id: new Types.ObjectId(projectId) });
    expect(JSON.stringify(raw)).not.toContain(envSecret);
    expect(JSON.stringify(raw)).not.toContain(bearer);
    expect(secretBox.open(raw?.mcpServers[0].env[0].valueEncrypted)).toBe(envSecret);

    // Values left out (null, or no env / bearerToken at all) keep the stored ones.
    const edited = await user.patch(`/api/projects/${projectId}`, {
      mcpServers: [
        {
          name: "github",
          command: ["node", "tools/github-mcp.mjs"],
          env: { GITHUB_TOKEN: null, EXTRA: "1" },
        },
        { name: "docs", url: "https://mcp.example.com/v2/mcp" },
      ],
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body.project.mcpServers[0].envKeys).toEqual(["GITHUB_TOKEN", "EXTRA"]);
    expect(edited.body.project.mcpServers[1].hasBearerToken).toBe(true);
    const kept = await models.Project.findById(projectId).lean();
    expect(secretBox.open(kept?.mcpServers[0]?.env[0]?.valueEncrypted ?? "")).toBe(envSecret);
    expect(secretBox.open(kept?.mcpServers[1]?.bearerTokenEncrypted ?? "")).toBe(bearer);

    // A kept value needs one stored; bearerToken null removes the token; [] removes every server.
    const nothingStored = await user.patch(`/api/projects/${projectId}`, {
      mcpServers: [{ name: "github", command: ["x"], env: { NEW_ONE: null } }],
    });
    expect(nothingStored.status).toBe(400);
    expect(nothingStored.body.error.message).toContain("mcpServers.0.env.NEW_ONE");
    const tokenless = await user.patch(`/api/projects/${projectId}`, {
      mcpServers: [{ name: "docs", url: "https://mcp.example.com/mcp", bearerToken: null }],
    });
    expect(tokenless.body.project.mcpServers[0].hasBearerToken).toBe(false);
    const cleared = await user.patch(`/api/projects/${projectId}`, { mcpServers: [] });
    expect(cleared.body.project.mcpServers).toEqual([]);
  });

  it("refuses a bad server list with 400 naming the field", async () => {
    const user = await signup(fixture.server.url, "mcp-invalid");
    const { projectId } = await setupWorkspace(user);
    const many = Array.from({ length: 21 }, (_, index) => ({ name: `s${index}`, command: ["x"] }));
    for (const [mcpServers, field] of [
      [[{ name: "Bad Name", command: ["x"] }], "mcpServers.0.name"],
      [[{ name: "a__b", command: ["x"] }], "mcpServers.0.name"],
      [[{ name: "x".repeat(33), command: ["x"] }], "mcpServers.0.name"],
      [[{ name: "both", command: ["x"], url: "https://a.example" }], "mcpServers.0.command"],
      [[{ name: "neither" }], "mcpServers.0.command"],
      [[{ name: "ftp", url: "ftp://a.example" }], "mcpServers.0.url"],
      [[{ name: "creds", url: "https://me:pw@a.example" }], "mcpServers.0.url"],
      [[{ name: "empty", command: [] }], "mcpServers.0.command"],
      [[{ name: "env", command: ["x"], env: { "BAD-NAME": "1" } }], "mcpServers.0.env.BAD-NAME"],
      [[{ name: "env", url: "https://a.example", env: { A: "1" } }], "mcpServers.0.env"],
      [[{ name: "tok", command: ["x"], bearerToken: "abcd" }], "mcpServers.0.bearerToken"],
      [[{ name: "extra", command: ["x"], shell: true }], "mcpServers.0"],
      [
        [
          { name: "twice", command: ["x"] },
          { name: "twice", url: "https://a.example" },
        ],
        "mcpServers.1.name",
      ],
      [many, "mcpServers"],
      ["not a list", "mcpServers"],
    ] as const) {
      const refused = await user.patch(`/api/projects/${projectId}`, { mcpServers });
      expect(refused.status, JSON.stringify(mcpServers)).toBe(400);
      expect(
        refused.body.error.details.map((issue: { path: string }) => issue.path),
        JSON.stringify(mcpServers),
      ).toContain(field);
    }
    expect((await user.get("/api/projects")).body.projects[0].mcpServers).toEqual([]);
  });

  it("opens the secrets only in the work order a drone receives", async () => {
    const user = await signup(fixture.server.url, "mcp-orders");
    const { projectId, sessionId, providerId } = await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user, { name: "mcp-drone" });
    const drone = await ScriptedDrone.connect({ url: fixture.server.url, droneId, credential });
    fixture.drones.push(drone);
    await user.patch(`/api/projects/${projectId}`, {
      mcpServers: [
        { name: "local", command: ["node", "server.mjs"], env: { API_TOKEN: envSecret } },
        { name: "remote", url: "http://127.0.0.1:9/mcp", bearerToken: bearer, tools: ["search"] },
      ],
    });
    const posted = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Go",
      providerId,
    });
    const order = await drone.nextWorkOrder();
    expect(order.project.mcpServers).toEqual([
      { name: "local", command: ["node", "server.mjs"], env: { API_TOKEN: envSecret } },
      {
        name: "remote",
        url: "http://127.0.0.1:9/mcp",
        env: {},
        bearerToken: bearer,
        tools: ["search"],
      },
    ]);
    const turnId = posted.body.turn._id;
    await drone.stream(turnId, [
      agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
    ]);
    await waitFor(
      async () => (await user.get(`/api/turns/${turnId}`)).body.turn.status === "completed",
    );
  });
});

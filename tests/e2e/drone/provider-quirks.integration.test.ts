// A provider that refuses a request for a documented reason, end to end: the real server, Redis
// and FerretDB, the gadget-drone process, and the scripted model answering with bodies recorded
// from real providers. The turn adapts and completes, the provider remembers what was learned,
// and the next turn's first request is already adapted; a check's probe runs on the drone.
// Every recorded rejection is met once in a real drone turn, on a provider of its own.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ScriptedError, type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoDir } from "../paths.ts";
import {
  createProjectSession,
  type DroneProcess,
  startRegisteredDrone,
  turnEvents,
  waitForTurn,
} from "./helpers.ts";

/** A rejection recorded from a real provider (sources in the fixtures' index.json). */
function recorded(file: string): ScriptedError {
  const fixture = JSON.parse(
    readFileSync(path.join(repoDir, "packages/agent/src/__fixtures__/rejections", file), "utf8"),
  ) as { status: number; body: unknown };
  return { status: fixture.status, body: fixture.body };
}

const finished = ["completed", "failed", "interrupted", "cancelled"];

describe("provider quirks end to end", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let drone: DroneProcess;
  let sessionId: string;
  let providerId: string;

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 30_000 },
      `drone_quirks_${process.pid}`,
    );
    model = await startScriptedModel({ apiKey: "sk-quirks" });
    user = await signup(server.url, "quirks-e2e");
    const workspace = await createProjectSession(user, {
      name: "Quirks",
      modelUrl: model.baseUrl,
      files: { "README.md": "# Quirks\n" },
    });
    sessionId = workspace.sessionId;
    // A provider whose turns send a temperature, as a reasoning model refuses.
    const provider = await user.post("/api/providers", {
      name: "reasoning model",
      baseUrl: model.baseUrl,
      apiKey: "sk-quirks",
      modelId: "scripted-model",
      params: { temperature: 0.7 },
    });
    providerId = provider.body.provider._id;
    ({ drone } = await startRegisteredDrone(user, server.url, "quirks-drone"));
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  it("a turn meets recorded rejections, adapts, completes, and the provider remembers", async () => {
    model.enqueue(
      { error: recorded("openai-temperature-value.json") },
      {
        toolCalls: [
          { id: "call_Xk2mQ8vLp3RtY7wZ", name: "read_file", arguments: { path: "README.md" } },
        ],
      },
      { error: recorded("mistral-tool-call-id.json") },
      { text: "The README is a title." },
    );
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "What does the README say?",
      providerId,
    });
    const turnId = created.body.turn._id;
    const turn = await waitForTurn(user, turnId, finished);
    expect(turn.status).toBe("completed");
    expect(turn.response).toBe("The README is a title.");

    const adapted = (await turnEvents(user, turnId)).filter(
      (event) => event.type === "provider_adapted",
    );
    expect(adapted.map((event) => event.data.quirk)).toEqual([
      "no_temperature",
      "short_tool_call_ids",
    ]);
    expect(adapted[0].data.message).toBe(
      "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
    );

    const requests = model.chatRequests;
    expect(requests[0]?.temperature).toBe(0.7);
    expect(requests[1]).not.toHaveProperty("temperature");
    const sentIds = (index: number) =>
      requests[index]!.messages.flatMap((message) => message.tool_calls ?? []).map(
        (call) => call.id,
      );
    expect(sentIds(2)).toEqual(["call_Xk2mQ8vLp3RtY7wZ"]);
    const [short] = sentIds(3);
    expect(short).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(requests[3]!.messages.find((message) => message.role === "tool")?.tool_call_id).toBe(
      short,
    );

    const providers = (await user.get("/api/providers")).body.providers as Array<{
      _id: string;
      quirks: Array<{ code: string; message: string }>;
    }>;
    const provider = providers.find((entry) => entry._id === providerId);
    expect(provider?.quirks.map((quirk) => quirk.code)).toEqual([
      "no_temperature",
      "short_tool_call_ids",
    ]);
    expect(provider?.quirks[1]?.message).toContain("with a length of 9");
  });

  it("the next turn's first request is already adapted", async () => {
    const before = model.chatRequests.length;
    model.enqueue({ text: "Adapted from the start." });
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Say it again",
      providerId,
    });
    const turn = await waitForTurn(user, created.body.turn._id, finished);
    expect(turn.status).toBe("completed");
    expect(model.chatRequests.length).toBe(before + 1);
    expect(model.chatRequests[before]).not.toHaveProperty("temperature");
    const events = await turnEvents(user, created.body.turn._id);
    expect(events.some((event) => event.type === "provider_adapted")).toBe(false);
  });

  it("the check's probe runs on the drone, with what the provider is known to refuse", async () => {
    const before = model.chatRequests.length;
    model.enqueue({
      reasoning: "The weather tool fits.",
      toolCalls: [{ name: "report_weather", arguments: { city: "Paris" } }],
    });
    const check = await user.post(`/api/providers/${providerId}/check`);
    expect(check.body).toMatchObject({
      ok: true,
      via: "drone",
      probe: { streaming: true, toolCalling: true, reasoning: true, usage: true },
      quirks: [],
    });
    // The tool call, then the image call (decision 0051), both adapted already.
    expect(model.chatRequests.length).toBe(before + 2);
    expect(model.chatRequests[before]).not.toHaveProperty("temperature");
    expect(model.chatRequests[before + 1]).not.toHaveProperty("temperature");
  });

  it("forgotten quirks are learned again by the next turn", async () => {
    const forgotten = await user.delete(`/api/providers/${providerId}/quirks`);
    expect(forgotten.body.provider.quirks).toEqual([]);
    const before = model.chatRequests.length;
    model.enqueue({ error: recorded("openai-temperature-parameter.json") }, { text: "Again." });
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Once more",
      providerId,
    });
    const turn = await waitForTurn(user, created.body.turn._id, finished);
    expect(turn.status).toBe("completed");
    expect(model.chatRequests[before]?.temperature).toBe(0.7);
    const providers = (await user.get("/api/providers")).body.providers as Array<{
      _id: string;
      quirks: Array<{ code: string }>;
    }>;
    expect(providers.find((entry) => entry._id === providerId)?.quirks).toMatchObject([
      { code: "no_temperature" },
    ]);
  });

  describe("each recorded rejection, recovered from in a real drone turn", () => {
    /** A provider of its own (no quirks yet) sending every sampling field a rejection names. */
    async function freshProvider(name: string): Promise<string> {
      const created = await user.post("/api/providers", {
        name,
        baseUrl: model.baseUrl,
        apiKey: "sk-quirks",
        modelId: "scripted-model",
        params: { temperature: 0.7, topP: 0.9, maxTokens: 2_000 },
      });
      return created.body.provider._id;
    }

    async function runOn(provider: string, prompt: string) {
      const created = await user.post(`/api/sessions/${sessionId}/turns`, {
        prompt,
        providerId: provider,
      });
      const turnId = created.body.turn._id as string;
      const turn = await waitForTurn(user, turnId, finished);
      const adapted = (await turnEvents(user, turnId))
        .filter((event) => event.type === "provider_adapted")
        .map((event) => event.data.quirk);
      const providers = (await user.get("/api/providers")).body.providers as Array<{
        _id: string;
        quirks: Array<{ code: string }>;
      }>;
      const remembered = providers
        .find((entry) => entry._id === provider)
        ?.quirks.map((quirk) => quirk.code);
      return { turn, adapted, remembered };
    }

    const fieldCases = [
      { file: "openai-temperature-value.json", quirk: "no_temperature", field: "temperature" },
      { file: "openai-temperature-parameter.json", quirk: "no_temperature", field: "temperature" },
      { file: "openai-top-p.json", quirk: "no_top_p", field: "top_p" },
      { file: "openai-max-tokens.json", quirk: "max_completion_tokens", field: "max_tokens" },
      {
        file: "fireworks-stream-options.json",
        quirk: "no_stream_options",
        field: "stream_options",
      },
    ];
    for (const { file, quirk, field } of fieldCases) {
      it(`${file}: ${quirk}`, async () => {
        const provider = await freshProvider(file);
        const before = model.chatRequests.length;
        model.enqueue({ error: recorded(file) }, { text: "Adapted." });
        const { turn, adapted, remembered } = await runOn(provider, `Meet ${file}`);
        expect(turn.status).toBe("completed");
        expect(turn.response).toBe("Adapted.");
        expect(adapted).toEqual([quirk]);
        expect(remembered).toEqual([quirk]);
        expect(model.chatRequests[before]).toHaveProperty(field);
        expect(model.chatRequests[before + 1]).not.toHaveProperty(field);
        if (quirk === "max_completion_tokens")
          expect(model.chatRequests[before + 1]?.max_completion_tokens).toBe(2_000);
      });
    }

    it("DeepSeek's missing reasoning_content, then Mistral refusing it: echoed, then not", async () => {
      const provider = await freshProvider("reasoning echo");
      const before = model.chatRequests.length;
      const readme = { name: "read_file", arguments: { path: "README.md" } };
      model.enqueue(
        { reasoning: "Read the README first.", toolCalls: [readme] },
        { error: recorded("deepseek-missing-reasoning-content.json") },
        { reasoning: "Once more.", toolCalls: [{ name: "list_dir", arguments: { path: "." } }] },
        { error: recorded("mistral-reasoning-content-forbidden.json") },
        { text: "Read and listed." },
      );
      const { turn, adapted, remembered } = await runOn(
        provider,
        "Read the README, then list the files",
      );
      expect(turn.status).toBe("completed");
      expect(turn.response).toBe("Read and listed.");
      expect(adapted).toEqual(["echo_reasoning", "no_reasoning_echo"]);
      // The two are opposites: the provider keeps the one learned last.
      expect(remembered).toEqual(["no_reasoning_echo"]);
      // What each request sent back with this turn's own calls (history messages have none).
      const echoed = (index: number) =>
        model.chatRequests[before + index]?.messages
          .filter((message) => message.role === "assistant" && message.tool_calls)
          .map((message) => message.reasoning_content);
      expect(echoed(1)).toEqual([undefined]);
      expect(echoed(2)).toEqual(["Read the README first."]);
      expect(echoed(3)).toEqual(["Read the README first.", "Once more."]);
      expect(echoed(4)).toEqual([undefined, undefined]);
    });
  });
});

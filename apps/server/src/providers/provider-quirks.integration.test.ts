// What a drone learns about a provider is remembered on it: a turn's `provider_adapted` adds the
// quirk (once per code), the provider shows it, later work orders carry it, and the owner can
// forget it. Quirks learned at once and the owner's edit made meanwhile all stay.
import { agentEvent } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { registerDrone, setupWorkspace, signup, waitFor } from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";
import { ProviderQuirks } from "./provider-quirks.ts";

const fixture = useTestServer();

async function userWithDrone(name: string) {
  const user = await signup(fixture.server.url, name);
  const workspace = await setupWorkspace(user);
  const registered = await registerDrone(user, { name: `${name}-drone` });
  const drone = await ScriptedDrone.connect({
    url: fixture.server.url,
    droneId: registered.droneId,
    credential: registered.credential,
  });
  fixture.drones.push(drone);
  return { user, workspace, drone };
}

async function runTurn(
  context: Awaited<ReturnType<typeof userWithDrone>>,
  events: Parameters<ScriptedDrone["stream"]>[1],
) {
  const { user, workspace, drone } = context;
  const posted = await user.post(`/api/sessions/${workspace.sessionId}/turns`, {
    prompt: "Work",
    providerId: workspace.providerId,
  });
  const turnId: string = posted.body.turn._id;
  const order = await drone.nextWorkOrder();
  const ack = await drone.stream(turnId, [
    ...events,
    agentEvent("response", { message: "done" }),
    agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
  ]);
  expect(ack.ok).toBe(true);
  await waitFor(
    async () => (await user.get(`/api/turns/${turnId}`)).body.turn.status === "completed",
    5_000,
    "turn completed",
  );
  return order;
}

const temperatureWords =
  "Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported.";

describe("quirks learned by a turn", () => {
  it("are remembered on the turn's provider and sent with the next work order", async () => {
    const context = await userWithDrone("learns");
    const first = await runTurn(context, [
      agentEvent("provider_adapted", { quirk: "no_temperature", message: temperatureWords }),
      agentEvent("provider_adapted", { quirk: "echo_reasoning", message: "Missing field" }),
    ]);
    expect(first.provider.quirks).toEqual([]);

    const listed = await context.user.get("/api/providers");
    const provider = listed.body.providers[0];
    expect(provider.quirks).toEqual([
      { code: "no_temperature", message: temperatureWords, learnedAt: expect.any(String) },
      { code: "echo_reasoning", message: "Missing field", learnedAt: expect.any(String) },
    ]);

    // The same quirk again keeps one entry; its opposite replaces it.
    const second = await runTurn(context, [
      agentEvent("provider_adapted", { quirk: "no_temperature", message: "again" }),
      agentEvent("provider_adapted", { quirk: "no_reasoning_echo", message: "Extra inputs" }),
    ]);
    expect(second.provider.quirks).toEqual(["no_temperature", "echo_reasoning"]);
    const after = (await context.user.get("/api/providers")).body.providers[0];
    expect(after.quirks.map((quirk: { code: string }) => quirk.code)).toEqual([
      "no_temperature",
      "no_reasoning_echo",
    ]);
    expect(after.quirks[0].message).toBe(temperatureWords);

    const third = await runTurn(context, []);
    expect(third.provider.quirks).toEqual(["no_temperature", "no_reasoning_echo"]);
  });
});

describe("quirks learned at once", () => {
  it("all stay, and so does the owner's rename made meanwhile", async () => {
    const user = await signup(fixture.server.url, "learns-at-once");
    const { providerId } = await setupWorkspace(user);
    const { models, locks } = fixture.server.context;
    const quirks = new ProviderQuirks(models, locks);
    const codes = [
      "no_temperature",
      "no_top_p",
      "max_completion_tokens",
      "no_stream_options",
      "short_tool_call_ids",
    ] as const;
    // FerretDB v1 rewrites the whole document on each update: unlocked, one write undoes another.
    await Promise.all(
      codes.flatMap((quirk, index) => [
        quirks.remember(providerId, [{ quirk, message: `refused ${index}` }]),
        user.patch(`/api/providers/${providerId}`, { name: `renamed ${index}` }),
      ]),
    );
    const provider = (await user.get("/api/providers")).body.providers[0];
    expect(provider.quirks.map((quirk: { code: string }) => quirk.code).sort()).toEqual(
      [...codes].sort(),
    );
    expect(provider.name).toMatch(/^renamed \d$/);
  });
});

describe("DELETE /api/providers/:id/quirks", () => {
  it("forgets the quirks for the owner; another user's provider is not found", async () => {
    const context = await userWithDrone("forgets");
    await runTurn(context, [
      agentEvent("provider_adapted", {
        quirk: "short_tool_call_ids",
        message: "Tool call id was…",
      }),
    ]);
    const { providerId } = context.workspace;

    const stranger = await signup(fixture.server.url, "stranger");
    const hidden = await stranger.delete(`/api/providers/${providerId}/quirks`);
    expect(hidden.status).toBe(404);
    expect((await context.user.get("/api/providers")).body.providers[0].quirks).toHaveLength(1);

    const forgotten = await context.user.delete(`/api/providers/${providerId}/quirks`);
    expect(forgotten.status).toBe(200);
    expect(forgotten.body.provider).toMatchObject({ _id: providerId, quirks: [] });
    expect((await context.user.get("/api/providers")).body.providers[0].quirks).toEqual([]);
    const next = await runTurn(context, []);
    expect(next.provider.quirks).toEqual([]);
    expect((await context.user.delete("/api/providers/not-an-id/quirks")).status).toBe(404);
  });
});

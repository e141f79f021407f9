// What the engine is asked for a work order, and for a repair pass after failed verification:
// pure mappings, checked without git, a sandbox or a server.
import type { TurnOutcome } from "@gadget/agent";
import { type IWorkOrderInput, workOrderSchema } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { engineInput } from "./engine-input.ts";
import { repairInput } from "./verification.ts";

const at = "2025-01-01T00:00:00.000Z";

function order(overrides: Partial<IWorkOrderInput> = {}) {
  return workOrderSchema.parse({
    turnId: "65f1a2b3c4d5e6f7a8b9c0d1",
    project: {
      _id: "65f1a2b3c4d5e6f7a8b9c0d2",
      name: "Demo",
      slug: "demo",
      gitUrl: "https://example.com/demo.git",
    },
    session: { name: "Fix it", mode: "agent" },
    provider: {
      baseUrl: "https://models.example.com/v1",
      apiKey: "sk-secret",
      modelId: "small",
      params: { temperature: 0.2 },
    },
    context: [{ role: "user", content: "Earlier question", createdAt: at }],
    prompt: "Fix the failing test",
    ...overrides,
  } satisfies IWorkOrderInput);
}

const workspace = { directory: "/work/demo", tools: [] };

describe("engineInput", () => {
  it("asks the engine for the prompt, with the history, the session's mode and the worktree", () => {
    const input = engineInput(order(), workspace);
    expect(input).toMatchObject({
      goal: "Fix the failing test",
      history: [{ role: "user", content: "Earlier question" }],
      mode: "agent",
      approval: "auto",
      allowedCommands: [],
      workspace: "/work/demo",
      tools: [],
    });
    expect(input.contextSources?.length).toBeGreaterThan(0);
    expect(input.resume).toBeUndefined();
  });

  it("leaves out the provider's optional fields when the order has none", () => {
    const { provider } = engineInput(order(), workspace);
    expect(provider).toEqual({
      baseUrl: "https://models.example.com/v1",
      apiKey: "sk-secret",
      modelId: "small",
      params: { temperature: 0.2 },
      quirks: [],
      acceptsImages: false,
    });
  });

  it("gives the engine the prompt's images and whether the model takes them", () => {
    const image = { mediaType: "image/png" as const, data: "iVBORw0KGgo=" };
    const base = order();
    const input = engineInput(
      order({ images: [image], provider: { ...base.provider, images: true } }),
      workspace,
    );
    expect(input.images).toEqual([image]);
    expect(input.provider.acceptsImages).toBe(true);
    expect(engineInput(base, workspace)).not.toHaveProperty("images");
  });

  it("passes the provider's name, escalation model, context window and pricing when set", () => {
    const pricing = { inputPerMTok: 1, outputPerMTok: 2 };
    const { provider } = engineInput(
      order({
        provider: {
          name: "Local",
          baseUrl: "https://models.example.com/v1",
          apiKey: "sk-secret",
          modelId: "small",
          params: {},
          escalationModelId: "large",
          contextWindow: 32_000,
          pricing,
        },
      }),
      workspace,
    );
    expect(provider).toMatchObject({
      name: "Local",
      escalationModelId: "large",
      contextWindow: 32_000,
      pricing,
    });
  });

  it("resumes from the saved state, parsing it when the server stored it as JSON text", () => {
    const messages = [{ role: "user" as const, content: "Fix the failing test", createdAt: at }];
    const state = { version: 1, passes: 3 };
    const asText = engineInput(
      order({ resume: { messages, state: JSON.stringify(state) } }),
      workspace,
    );
    const asObject = engineInput(order({ resume: { messages, state } }), workspace);
    expect(asText.resume?.state).toEqual(state);
    expect(asText.resume?.messages).toHaveLength(1);
    expect(asObject.resume).toEqual(asText.resume);
  });
});

describe("repairInput", () => {
  it("makes the failure the goal and the turn's conversation, without tool calls or thinking, its history", () => {
    const work = order();
    const previous = {
      messages: [
        { role: "user", content: "Fix the failing test", createdAt: at },
        {
          role: "assistant",
          content: "",
          createdAt: at,
          toolCalls: [{ id: "1", name: "read_file", arguments: "{}" }],
        },
        { role: "tool", content: "file text", toolCallId: "1", createdAt: at },
        { role: "assistant", content: "<thinking>hmm</thinking>\nFixed it.", createdAt: at },
      ],
    } as unknown as TurnOutcome;
    const report = "$ pnpm test\n(exit code 1)\n1 failed";
    const input = repairInput(engineInput(work, workspace), work.context, previous, report);
    expect(input.goal).toContain("verification commands failed");
    expect(input.goal).toContain(report);
    expect(input.history).toEqual([
      expect.objectContaining({ role: "user", content: "Earlier question" }),
      { role: "user", content: "Fix the failing test", createdAt: at },
      { role: "assistant", content: "Fixed it.", createdAt: at },
    ]);
    expect(input.workspace).toBe("/work/demo");
    expect(input.provider.modelId).toBe("small");
  });
});

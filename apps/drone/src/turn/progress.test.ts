// The drone terminal's line for a turn, folded from the turn's events.
import { agentEvent, workOrderSchema } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { startProgress, trackProgress } from "./progress.ts";

const order = workOrderSchema.parse({
  turnId: "65f1a2b3c4d5e6f7a8b9c0d1",
  project: { _id: "65f1a2b3c4d5e6f7a8b9c0d2", name: "Demo", slug: "demo", gitUrl: "/tmp/demo" },
  session: { name: "Fix it", mode: "agent" },
  provider: { baseUrl: "https://models.example.com/v1", apiKey: "k", modelId: "m", params: {} },
  context: [],
  prompt: "Fix it",
});

describe("trackProgress", () => {
  it("shows the phase and message of a status, the running tool, then the tokens and cost", () => {
    const progress = startProgress(order, 1_000);
    expect(progress).toMatchObject({ project: "Demo", phase: "starting", pass: 0, tool: null });

    expect(
      trackProgress(progress, agentEvent("status", { message: "Pass 2", pass: 2, phase: "model" })),
    ).toBe(true);
    expect(progress).toMatchObject({ pass: 2, phase: "model", detail: "Pass 2" });

    trackProgress(
      progress,
      agentEvent("tool_start", { callId: "1", tool: "read_file", params: {} }),
    );
    expect(progress).toMatchObject({ tool: "read_file", phase: "tool" });
    trackProgress(
      progress,
      agentEvent("tool_result", { callId: "1", tool: "read_file", ok: true, summary: "12 lines" }),
    );
    expect(progress).toMatchObject({ tool: null, phase: "thinking" });

    trackProgress(
      progress,
      agentEvent("cost_update", {
        totalCost: 0.25,
        tokens: { input: 1_000, output: 200, reasoning: 0, cached: 0 },
      }),
    );
    expect(progress).toMatchObject({ tokens: 1_200, cost: 0.25 });
  });

  it("leaves the line as it is for the answer's tokens", () => {
    const progress = startProgress(order);
    const before = { ...progress };
    expect(trackProgress(progress, agentEvent("token", { text: "Done" }))).toBe(false);
    expect(progress).toEqual(before);
  });
});

// Provider failures (retries, fatal answers) and cancellation mid-stream, mid-tool and mid-approval.

import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import type { AgentEvent } from "@gadget/protocol";
import { type ScriptedModel, scriptedErrors, startScriptedModel } from "@gadget/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { baseInput, collect, fastTunables, toolLog, wrap } from "./__fixtures__/turn.ts";
import { providerLabel } from "./model-call.ts";
import { runTurn } from "./run-turn.ts";
import { defineTool } from "./tool.ts";
import type { TurnInput, TurnOptions } from "./turn-input.ts";

let model: ScriptedModel;
beforeEach(async () => {
  model = await startScriptedModel();
  toolLog.length = 0;
});
afterEach(async () => {
  await model.close();
});

/** Runs a turn and aborts it once `when` sees a matching event. */
async function runAndAbortOn(
  input: TurnInput,
  when: (event: AgentEvent) => boolean,
  options: TurnOptions = {},
) {
  const controller = new AbortController();
  const events: AgentEvent[] = [];
  const generator = runTurn(input, {
    tunables: fastTunables,
    signal: controller.signal,
    ...options,
  });
  let step = await generator.next();
  while (!step.done) {
    events.push(step.value);
    if (when(step.value)) controller.abort();
    step = await generator.next();
  }
  return wrap(events, step.value);
}

describe("provider errors", () => {
  it("retries a 429, honouring retry-after-ms, then succeeds", async () => {
    model.enqueue({ error: scriptedErrors.rateLimited({ retryAfterMs: 10 }) }, { text: "made it" });
    const run = await collect(baseInput(model));
    expect(run.outcome).toMatchObject({ reason: "completed", response: "made it" });
    expect(model.chatRequests).toHaveLength(2);
    const retry = run.of("status").find((data) => data.phase === "retry");
    expect(retry?.message).toMatch(/HTTP 429.*retrying in 10 ms \(retry 1 of 4\)/);
  });

  it("waits out a rate limit that outlasts the retries (x-ratelimit-reset), then goes on", async () => {
    const limited = {
      error: {
        status: 429,
        message: "slow down",
        headers: { "x-ratelimit-reset-requests": "30ms" },
      },
    };
    model.enqueue(limited, limited, limited, { text: "after the wait" });
    const run = await collect(baseInput(model), {
      tunables: {
        ...fastTunables,
        retry: { maxRetries: 1, baseDelayMs: 1, maxQuotaWaitMs: 60_000 },
      },
    });
    expect(run.outcome).toMatchObject({ reason: "completed", response: "after the wait" });
    const waits = run.of("quota_wait") as Array<{ since: string; until: string }>;
    expect(waits).toHaveLength(1);
    expect(Date.parse(waits[0]!.until)).toBeGreaterThanOrEqual(Date.parse(waits[0]!.since));
  });

  it("a resumed turn goes on with the wait it was in: no call before its end, counted from its start", async () => {
    let firstCallAt = 0;
    model.setHandler(() => {
      firstCallAt ||= Date.now();
      return { text: "answered after the carried wait" };
    });
    const since = new Date(Date.now() - 60_000).toISOString();
    const until = Date.now() + 400;
    const run = await collect({
      ...baseInput(model),
      quotaWait: { since, until: new Date(until).toISOString() },
    });
    expect(run.outcome).toMatchObject({ reason: "completed" });
    expect(firstCallAt).toBeGreaterThanOrEqual(until);
    expect(run.of("quota_wait")).toEqual([
      {
        since,
        until: new Date(until).toISOString(),
        message: expect.stringMatching(/Still rate-limited/),
      },
    ]);
  });

  it("a carried wait that has ended already is not waited again", async () => {
    model.enqueue({ text: "at once" });
    const run = await collect({
      ...baseInput(model),
      quotaWait: {
        since: new Date(Date.now() - 5_000).toISOString(),
        until: new Date(Date.now() - 1_000).toISOString(),
      },
    });
    expect(run.outcome).toMatchObject({ reason: "completed", response: "at once" });
    expect(run.of("quota_wait")).toEqual([]);
  });

  it("a rate-limit wait is cancellable: the turn ends cancelled at once", async () => {
    model.setHandler(() => ({
      error: { status: 429, message: "slow down", headers: { "retry-after": "3600" } },
    }));
    const run = await runAndAbortOn(baseInput(model), (event) => event.type === "quota_wait", {
      tunables: {
        ...fastTunables,
        retry: { maxRetries: 0, baseDelayMs: 1, maxQuotaWaitMs: 24 * 3_600_000 },
      },
    });
    expect(run.types()).toContain("quota_wait");
    expect(run.outcome.reason).toBe("cancelled");
  });

  it("fails as quota_wait_exceeded when the rate limit lasts longer than it may wait", async () => {
    model.setHandler(() => ({
      error: { status: 503, message: "overloaded", headers: { "retry-after": "3600" } },
    }));
    const run = await collect(baseInput(model), {
      tunables: {
        ...fastTunables,
        retry: { maxRetries: 0, baseDelayMs: 1, maxQuotaWaitMs: 1_000 },
      },
    });
    expect(run.outcome.reason).toBe("quota_wait_exceeded");
    expect(run.of("error")).toEqual([
      { code: "quota_wait_exceeded", message: expect.stringMatching(/rate limit lasted longer/) },
    ]);
  });

  it("retries 5xx answers and a connection dropped mid-stream", async () => {
    model.enqueue(
      { error: scriptedErrors.serverError(503) },
      { text: "partial answer that never ends", dropAfterChunks: 2 },
      { text: "complete" },
    );
    const run = await collect(baseInput(model));
    expect(run.outcome).toMatchObject({ reason: "completed", response: "complete" });
    expect(model.chatRequests).toHaveLength(3);
  });

  it("gives up after the bounded number of retries with a clear error", async () => {
    model.setHandler(() => ({ error: scriptedErrors.serverError(500) }));
    const run = await collect(baseInput(model), {
      tunables: { ...fastTunables, retry: { maxRetries: 2, baseDelayMs: 1 } },
    });
    expect(model.chatRequests).toHaveLength(3);
    expect(run.outcome.reason).toBe("error");
    expect(run.of("error")).toEqual([
      {
        code: "provider_unavailable",
        message: expect.stringMatching(/kept failing after 3 attempts: HTTP 500/),
      },
    ]);
    expect(run.types().slice(-2)).toEqual(["error", "done"]);
  });

  it("names the provider and its base URL when it cannot be reached", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const baseUrl = `http://127.0.0.1:${port}/v1`;
    const run = await collect(
      baseInput(model, {
        provider: { name: "Local LLM", baseUrl, apiKey: "test-key", modelId: "model-a" },
      }),
      { tunables: { ...fastTunables, retry: { maxRetries: 1, baseDelayMs: 1 } } },
    );
    expect(run.outcome.reason).toBe("error");
    const [error] = run.of("error");
    expect(error?.code).toBe("provider_unavailable");
    expect(error?.message).toContain(
      `Could not reach provider "Local LLM" at http://127.0.0.1:${port}/v1`,
    );
    expect(error?.message).toMatch(/Connection error\..*base URL/);
    const retry = run.of("status").find((data) => data.phase === "retry");
    expect(retry?.message).toContain(
      `reaching provider "Local LLM" at http://127.0.0.1:${port}/v1`,
    );
  });

  it("names a provider by its URL without the credentials or query written into it", () => {
    expect(providerLabel({ baseUrl: "https://ada:s3cret@llm.example/v1/?key=k1" })).toBe(
      "the model provider at https://llm.example/v1",
    );
  });

  it("fails at once on 401 with a message that points at the API key", async () => {
    model.enqueue({ error: scriptedErrors.unauthorized() }, { text: "never used" });
    const run = await collect(baseInput(model));
    expect(model.chatRequests).toHaveLength(1);
    expect(run.outcome.reason).toBe("error");
    expect(run.outcome.error?.code).toBe("provider_auth");
    expect(run.outcome.error?.message).toMatch(/refused the credentials \(HTTP 401\).*API key/);
    expect(run.outcome.error?.message).not.toContain("test-key");
    expect(run.of("done")).toEqual([{ reason: "error", passes: 1, totalCost: 0 }]);
  });

  it("fails at once on an unknown model (404)", async () => {
    model.enqueue({ error: scriptedErrors.modelNotFound("model-a") });
    const run = await collect(baseInput(model));
    expect(run.outcome.error).toMatchObject({ code: "provider_model_not_found" });
    expect(run.outcome.error?.message).toMatch(/model-a/);
  });
});

describe("abort", () => {
  it("ends with done cancelled when aborted mid-stream, and the request is dropped", async () => {
    model.enqueue({
      text: "a long answer that hangs",
      hang: true,
      hangAfterChunks: 3,
      chunkSize: 2,
    });
    const run = await runAndAbortOn(baseInput(model), (event) => event.type === "token");
    expect(run.of("done")).toEqual([{ reason: "cancelled", passes: 1, totalCost: 0 }]);
    expect(run.types().filter((type) => type === "done")).toHaveLength(1);
    expect(run.of("response")).toEqual([]);
    expect(run.outcome.reason).toBe("cancelled");
  });

  it("aborts running tools through their signal, and does not wait for tools that ignore it", async () => {
    const aborted: string[] = [];
    const polite = defineTool({
      name: "polite",
      description: "Stops when told.",
      permission: "read",
      inputSchema: z.object({}),
      execute: (_input, context) =>
        new Promise((_resolve, reject) => {
          context.signal.addEventListener("abort", () => {
            aborted.push("polite");
            reject(new Error("stopped"));
          });
        }),
    });
    const stubborn = defineTool({
      name: "stubborn",
      description: "Ignores its signal.",
      permission: "read",
      inputSchema: z.object({}),
      execute: (_input, context) => {
        context.signal.addEventListener("abort", () => aborted.push("stubborn saw it"));
        return new Promise(() => undefined);
      },
    });
    model.enqueue({
      toolCalls: [
        { name: "polite", arguments: {} },
        { name: "stubborn", arguments: {} },
      ],
    });
    let started = 0;
    const run = await runAndAbortOn(
      baseInput(model, { tools: [polite, stubborn] }),
      (event) => event.type === "tool_start" && ++started === 2,
      { tunables: { ...fastTunables, toolTimeoutMs: 60_000 } },
    );
    expect(aborted.sort()).toEqual(["polite", "stubborn saw it"]);
    expect(run.of("done")).toEqual([{ reason: "cancelled", passes: 1, totalCost: 0 }]);
    // The state still knows which calls never finished, so a resume can run them.
    expect(run.outcome.state.pendingCalls.map((pending) => pending.call.name)).toEqual([
      "polite",
      "stubborn",
    ]);
  });

  it("ends with done cancelled when aborted while waiting for an approval", async () => {
    model.enqueue({ toolCalls: [{ name: "write_file", arguments: { path: "a", content: "b" } }] });
    const run = await runAndAbortOn(
      baseInput(model, { approval: "on-write" }),
      (event) => event.type === "approval",
      { onApproval: () => new Promise(() => undefined) },
    );
    expect(run.outcome.reason).toBe("cancelled");
    expect(toolLog).toEqual([]);
  });

  it("ends with done cancelled when the signal is already aborted, without calling the model", async () => {
    const controller = new AbortController();
    controller.abort();
    const run = await collect(baseInput(model), { signal: controller.signal });
    expect(run.events).toEqual([
      { type: "done", data: { reason: "cancelled", passes: 0, totalCost: 0 } },
    ]);
    expect(model.chatRequests).toHaveLength(0);
  });

  it("stops waiting between retries when aborted", async () => {
    model.enqueue({ error: scriptedErrors.rateLimited({ retryAfterSeconds: 30 }) });
    const run = await runAndAbortOn(
      baseInput(model),
      (event) => event.type === "status" && event.data.phase === "retry",
    );
    expect(run.outcome.reason).toBe("cancelled");
    expect(model.chatRequests).toHaveLength(1);
  });
});

// Shared test fixtures: small tools, a base input against the scripted model, and event collection.
import type { AgentEvent, TurnEventType } from "@gadget/protocol";
import type { ScriptedModel } from "@gadget/testkit";
import { z } from "zod";
import { runTurn } from "../run-turn.ts";
import { type AnyTool, defineTool, ToolError } from "../tool.ts";
import type { TurnInput, TurnOptions, TurnOutcome } from "../turn-input.ts";

/** Small delays so retries and waits stay fast in tests. */
export const fastTunables: TurnOptions["tunables"] = {
  retry: { baseDelayMs: 5, maxDelayMs: 20 },
  toolTimeoutMs: 2_000,
  preEnrichmentTimeoutMs: 200,
};

export function baseInput(model: ScriptedModel, overrides: Partial<TurnInput> = {}): TurnInput {
  return {
    goal: "Summarise the project",
    provider: { baseUrl: model.baseUrl, apiKey: "test-key", modelId: "model-a" },
    workspace: "/tmp/gadget-test-workspace",
    tools: standardTools(),
    ...overrides,
  };
}

export interface Collected {
  events: AgentEvent[];
  outcome: TurnOutcome;
  /** Events of one type, with their data typed loosely for assertions. */
  of(type: TurnEventType): Array<Record<string, unknown>>;
  types(): string[];
}

/** Runs a turn to the end, keeping every event. */
export async function collect(input: TurnInput, options: TurnOptions = {}): Promise<Collected> {
  const generator = runTurn(input, { tunables: fastTunables, ...options });
  const events: AgentEvent[] = [];
  let step = await generator.next();
  while (!step.done) {
    events.push(step.value);
    step = await generator.next();
  }
  return wrap(events, step.value);
}

export function wrap(events: AgentEvent[], outcome: TurnOutcome): Collected {
  return {
    events,
    outcome,
    of: (type) =>
      events
        .filter((event) => event.type === type)
        .map((event) => event.data as Record<string, unknown>),
    types: () => events.map((event) => event.type),
  };
}

/** Records the order tools ran in. */
export const toolLog: string[] = [];

export function readTool(): AnyTool {
  return defineTool({
    name: "read_file",
    description: "Reads a file of the workspace. Returns its text.",
    permission: "read",
    inputSchema: z.object({ path: z.string() }),
    async execute({ path }) {
      toolLog.push(`read ${path}`);
      return { ok: true, output: `contents of ${path}`, summary: `read ${path}` };
    },
  });
}

export function writeTool(): AnyTool {
  return defineTool({
    name: "write_file",
    description: "Writes a file of the workspace.",
    permission: "write",
    inputSchema: z.object({ path: z.string(), content: z.string() }),
    describe: ({ path, content }) => `Write ${path} (${content.length} characters)`,
    async execute({ path, content }) {
      toolLog.push(`write ${path}=${content}`);
      return { ok: true, output: `wrote ${path}`, summary: `wrote ${path}` };
    },
  });
}

export function failingTool(): AnyTool {
  return defineTool({
    name: "run_command",
    description: "Runs a command.",
    permission: "write",
    inputSchema: z.object({ command: z.string() }),
    async execute({ command }) {
      if (command === "crash") throw new Error("segmentation fault");
      if (command === "refuse") throw new ToolError("refused", "pipes are not allowed");
      return { ok: false, output: `command failed: ${command}`, summary: "exit code 1" };
    },
  });
}

export function standardTools(): AnyTool[] {
  return [readTool(), writeTool(), failingTool()];
}

/** A read tool whose calls finish only when `release` is called; reports when started. */
export function gatedTool(name = "slow_read") {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const started: string[] = [];
  const tool = defineTool({
    name,
    description: "Waits for the test.",
    permission: "read",
    inputSchema: z.object({ id: z.string() }),
    async execute({ id }) {
      started.push(id);
      await gate;
      return { ok: true, output: `done ${id}`, summary: id };
    },
  });
  return { tool, started, release: () => release() };
}

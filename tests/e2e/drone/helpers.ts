// Helpers for the drone's end-to-end tests: a real server, a project repository, the CLI as a child process.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";
import { type ApiClient, waitFor } from "@gadget/testkit/wire";
import { droneBin } from "../paths.ts";

/** A fresh HOME so the drone never touches the real user's config. */
export async function freshHome(): Promise<string> {
  return makeTempDir("gadget-drone-home-");
}

/** Runs `gadget-drone <args>` to completion. */
export function runCli(
  args: string[],
  home: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [droneBin, ...args], {
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: "", XDG_DATA_HOME: "", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * `gadget-drone register` with a fresh registration token of `user`: what a person does once per
 * machine. Returns the CLI's result (a failed registration is the caller's to assert).
 */
export async function registerWithCli(
  user: ApiClient,
  serverUrl: string,
  options: {
    name: string;
    workspace: string;
    config: string;
    home: string;
    labels?: string[];
    capacity?: number;
  },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const token = await user.post("/api/drones/registration-tokens");
  return runCli(
    [
      "register",
      "--server",
      serverUrl,
      "--token",
      token.body.token,
      "--name",
      options.name,
      "--workspace",
      options.workspace,
      "--config",
      options.config,
      ...(options.labels ?? []).flatMap((label) => ["--label", label]),
      ...(options.capacity ? ["--capacity", String(options.capacity)] : []),
    ],
    options.home,
  );
}

/** A running `gadget-drone start`, with its output collected. */
export interface DroneProcess {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * Runs `gadget-drone start`; `wrapper` is a command line it runs under (e.g. `unshare` for a PID
 * namespace of its own).
 */
export function startCli(
  args: string[],
  home: string,
  env: Record<string, string> = {},
  wrapper: string[] = [],
): DroneProcess {
  const command = [...wrapper, process.execPath, droneBin, "start", ...args];
  const child = spawn(command[0] as string, command.slice(1), {
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: "", XDG_DATA_HOME: "", ...env },
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Waits until the user's drone list shows `name` online. */
export async function waitForDroneOnline(
  client: ApiClient,
  name: string,
  // A drone process starting on a busy machine (tsx compiling it) can take most of a minute.
  timeoutMs = 60_000,
): Promise<void> {
  await waitFor(
    async () => {
      const response = await client.get("/api/drones");
      return (response.body.drones as Array<{ name: string; status: string }>).some(
        (drone) => drone.name === name && drone.status === "online",
      );
    },
    timeoutMs,
    `drone ${name} online`,
  );
}

/**
 * A drone as a user sets one up: registered with the CLI in `home` (a fresh one unless given),
 * with `labels` when given, its workspaces under it, then started; resolves once the server shows it online.
 */
export async function startRegisteredDrone(
  user: ApiClient,
  serverUrl: string,
  name: string,
  options: { home?: string; labels?: string[] } = {},
): Promise<{ home: string; workspace: string; config: string; drone: DroneProcess }> {
  const home = options.home ?? (await freshHome());
  const workspace = path.join(home, "workspaces");
  const config = path.join(home, "drone.json");
  const registered = await registerWithCli(user, serverUrl, {
    name,
    workspace,
    config,
    home,
    ...(options.labels ? { labels: options.labels } : {}),
  });
  if (registered.code !== 0) throw new Error(`gadget-drone register failed: ${registered.stderr}`);
  const drone = startCli(["--config", config], home);
  // Starting runs the TypeScript source through tsx: slow on a loaded machine.
  await waitForDroneOnline(user, name, 60_000);
  return { home, workspace, config, drone };
}

/** Waits until the turn reaches one of `statuses`; returns it. */
export async function waitForTurn(
  client: ApiClient,
  turnId: string,
  statuses: string[],
  timeoutMs = 30_000,
  // biome-ignore lint/suspicious/noExplicitAny: test convenience; assertions check the shape
): Promise<any> {
  return waitFor(
    async () => {
      const response = await client.get(`/api/turns/${turnId}`);
      return statuses.includes(response.body.turn?.status) ? response.body.turn : null;
    },
    timeoutMs,
    `turn ${turnId} to be ${statuses.join(" or ")}`,
  );
}

/** All stored events of a turn, in seq order. */
// biome-ignore lint/suspicious/noExplicitAny: test convenience
export async function turnEvents(client: ApiClient, turnId: string): Promise<any[]> {
  const events: Array<{ seq: number }> = [];
  for (;;) {
    const after = events.at(-1)?.seq ?? 0;
    const page = await client.get(`/api/turns/${turnId}/events?after=${after}&limit=1000`);
    const batch = page.body.events as Array<{ seq: number }>;
    events.push(...batch);
    if (batch.length < 1000) return events;
  }
}

/** Quiet logger for in-process drones. */
export const quietLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** The events of a turn after `done` arrived (the turn finished on the server). */
export async function settledEvents(
  client: ApiClient,
  turnId: string,
  timeoutMs = 30_000,
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
): Promise<any[]> {
  // biome-ignore lint/suspicious/noExplicitAny: test convenience
  const events = await waitFor<any[] | null>(
    async () => {
      const stored = await turnEvents(client, turnId);
      return stored.at(-1)?.type === "done" ? stored : null;
    },
    timeoutMs,
    `turn ${turnId} to end`,
  );
  return events ?? [];
}

/** A project on a fresh bare repository, a session in it, and a provider pointing at `modelUrl`. */
export async function createProjectSession(
  client: ApiClient,
  options: {
    name: string;
    modelUrl: string;
    files?: Record<string, string | Uint8Array>;
    approval?: "auto" | "on-write";
  },
): Promise<{ providerId: string; projectId: string; projectSlug: string; sessionId: string }> {
  const { createRemote } = await import("gadget-drone/testing");
  const remote = await createRemote(options.files ?? { "README.md": `# ${options.name}\n` });
  const provider = await client.post("/api/providers", {
    name: "scripted",
    baseUrl: options.modelUrl,
    apiKey: "sk-x",
    modelId: "scripted-model",
  });
  const project = await client.post("/api/projects", { name: options.name, gitUrl: remote.bare });
  const session = await client.post(`/api/projects/${project.body.project._id}/sessions`, {
    name: "session",
    ...(options.approval ? { approval: options.approval } : {}),
  });
  return {
    providerId: provider.body.provider._id,
    projectId: project.body.project._id,
    projectSlug: project.body.project.slug,
    sessionId: session.body.session._id,
  };
}

/** The streamed output of each run_command of a turn's events, in order. */
// biome-ignore lint/suspicious/noExplicitAny: test convenience
export function commandOutputs(events: any[]): string[] {
  const outputs = new Map<string, string>();
  for (const event of events) {
    if (event.type === "tool_output") {
      outputs.set(event.data.callId, (outputs.get(event.data.callId) ?? "") + event.data.text);
    }
  }
  return events
    .filter((event) => event.type === "tool_result" && event.data.tool === "run_command")
    .map((event) => outputs.get(event.data.callId) ?? "");
}

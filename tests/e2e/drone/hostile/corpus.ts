// The hostile-repository corpus's harness: a real server, a real drone under bubblewrap and a
// scripted hostile model; a case is a program the model writes into the worktree and runs there
// (as a README could tell it to), then every path on which the drone's own git touches that
// worktree outside the sandbox is walked, and nothing may have happened outside.
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { makeTempDir, type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup, waitFor } from "@gadget/testkit/wire";
import { createRemote, worktreeDirectory } from "gadget-drone/testing";
import { expect, inject } from "vitest";
import {
  commandOutputs,
  type DroneProcess,
  freshHome,
  registerWithCli,
  settledEvents,
  startCli,
  waitForDroneOnline,
} from "../helpers.ts";

/** Secrets the drone's machine holds that no turn may ever show. */
export const hostSecrets = {
  sshKey: "PRIVATE-KEY-hostile-corpus-5e2a",
  databaseUrl: "postgres://app:db-pw-7c41@db.internal/app",
  githubPat: "ghp_hostileCorpusPat0a9b8c7d",
};

export interface Corpus {
  server: GadgetServer;
  model: ScriptedModel;
  user: ApiClient;
  providerId: string;
  /** The drone machine's HOME (its config, its ssh key). */
  home: string;
  workspaceRoot: string;
  config: string;
  credential: string;
  drone: DroneProcess;
  /** A directory on the host only the drone's own processes could reach: markers land here. */
  outside: string;
  close(): Promise<void>;
}

/**
 * Starts the server, the scripted model and a registered drone whose machine has an ssh key and
 * secrets in its environment (`DATABASE_URL`, `GH_PAT`), plus `extraEnv`.
 */
export async function startCorpus(
  name: string,
  options: { extraEnv?: (home: string) => Promise<Record<string, string>> } = {},
): Promise<Corpus> {
  const server = await startTestServer(
    {
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      // What production gives a drone: a busy machine's drone answers within these.
      droneGraceMs: 30_000,
      droneRequestTimeoutMs: 10_000,
    },
    `hostile_${name}_${process.pid}`,
  );
  const model = await startScriptedModel({ apiKey: "sk-hostile-provider-key" });
  const user = await signup(server.url, `hostile-${name}`);
  const provider = await user.post("/api/providers", {
    name: "scripted",
    baseUrl: model.baseUrl,
    apiKey: "sk-hostile-provider-key",
    modelId: "scripted-model",
  });
  const home = await freshHome();
  await mkdir(path.join(home, ".ssh"), { recursive: true });
  await writeFile(path.join(home, ".ssh", "id_rsa"), `${hostSecrets.sshKey}\n`, { mode: 0o600 });
  const workspaceRoot = path.join(home, "workspaces");
  // Where a user's config lives: the drone hides that directory, not the whole home.
  const config = path.join(home, ".config", "gadget-drone", "config.json");
  const registered = await registerWithCli(user, server.url, {
    name,
    workspace: workspaceRoot,
    config,
    home,
  });
  if (registered.code !== 0) throw new Error(`register failed: ${registered.stderr}`);
  const credential = JSON.parse(await readFile(config, "utf8")).credential as string;
  const drone = startCli(["--config", config], home, {
    DATABASE_URL: hostSecrets.databaseUrl,
    GH_PAT: hostSecrets.githubPat,
    ...((await options.extraEnv?.(home)) ?? {}),
  });
  await waitForDroneOnline(user, name);
  const outside = await makeTempDir("gadget-outside-");
  return {
    server,
    model,
    user,
    providerId: provider.body.provider._id,
    home,
    workspaceRoot,
    config,
    credential,
    drone,
    outside,
    async close() {
      drone.child.kill("SIGKILL");
      await model.close();
      await server.close();
    },
  };
}

export interface CorpusProject {
  projectId: string;
  slug: string;
  sessionId: string;
  /** The bare repository the project delivers its branch to. */
  bare: string;
}

/** A project on a fresh remote that delivers its session branch, and one session of it. */
export async function corpusProject(
  corpus: Corpus,
  name: string,
  files: Record<string, string> = {},
  settings: Record<string, unknown> = {},
): Promise<CorpusProject> {
  const remote = await createRemote({ "README.md": `# ${name}\n`, ...files });
  const project = await corpus.user.post("/api/projects", {
    name,
    gitUrl: remote.bare,
    delivery: "branch",
    ...settings,
  });
  expect(project.status, JSON.stringify(project.body)).toBe(201);
  const session = await corpus.user.post(`/api/projects/${project.body.project._id}/sessions`, {
    name: "s",
  });
  return {
    projectId: project.body.project._id,
    slug: project.body.project.slug,
    sessionId: session.body.session._id,
    bare: remote.bare,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: test convenience; assertions check the shape
export type StoredEvent = any;

/** Posts a turn and waits until it has ended; its id and events. */
export async function runTurn(
  corpus: Corpus,
  sessionId: string,
  prompt: string,
): Promise<{ turnId: string; events: StoredEvent[] }> {
  const created = await corpus.user.post(`/api/sessions/${sessionId}/turns`, {
    prompt,
    providerId: corpus.providerId,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(202);
  const turnId = created.body.turn._id as string;
  return { turnId, events: await settledEvents(corpus.user, turnId, 120_000) };
}

/**
 * Scripts the model to write `program` (an ES module run by node in the worktree) and run it,
 * then answer; returns the turn.
 */
export async function runHostileProgram(
  corpus: Corpus,
  sessionId: string,
  program: string,
): Promise<{ turnId: string; events: StoredEvent[]; output: string }> {
  corpus.model.enqueue(
    { toolCalls: [{ name: "write_file", arguments: { path: "setup.mjs", content: program } }] },
    { toolCalls: [{ name: "run_command", arguments: { command: "node setup.mjs" } }] },
    { text: "Set up as the README says." },
  );
  const turn = await runTurn(corpus, sessionId, "Follow the README's setup steps");
  return { ...turn, output: commandOutputs(turn.events).join("\n") };
}

/** The lines a program uses to run git in the sandbox (identity given, nothing to ask). */
export const gitPreamble = `
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync, symlinkSync, linkSync, utimesSync, readFileSync } from "node:fs";
const git = (cwd, ...args) =>
  execFileSync("git", ["-c", "user.name=m", "-c", "user.email=m@m", ...args], { cwd, encoding: "utf8" });
const attempt = (label, action) => {
  try { action(); console.log(label + " DONE"); } catch (error) { console.log(label + " FAILED " + (error.code ?? error.message.split("\\n")[0])); }
};
`;

/**
 * Walks every path on which the drone's own git (outside the sandbox) reads the session's worktree
 * after a hostile turn: the session page's branch state, a hand edit, "Deliver now", reverting the
 * hostile turn, the session's next turn, and pruning idle worktrees. Each must work, and the next
 * turn must complete.
 */
export async function followEveryGitPath(
  corpus: Corpus,
  project: CorpusProject,
  hostileTurnId: string,
): Promise<{ nextTurn: StoredEvent[] }> {
  const { user } = corpus;
  // The server gives the drone 2 s to answer; a busy machine may need another ask.
  const state = await waitFor(
    async () => {
      const page = await user.get(`/api/sessions/${project.sessionId}`);
      expect(page.status).toBe(200);
      return page.body.session.worktree;
    },
    30_000,
    "the session page's branch state, from the drone",
  );
  expect(state).toMatchObject({ head: expect.any(String) });

  const edit = await user.put(`/api/projects/${project.projectId}/file`, {
    path: "hand-edit.txt",
    content: "edited by hand\n",
    sessionId: project.sessionId,
  });
  expect(edit.status, JSON.stringify(edit.body)).toBe(200);

  const delivered = await user.post(`/api/sessions/${project.sessionId}/deliver`);
  expect(delivered.status, JSON.stringify(delivered.body)).toBe(202);
  expect(delivered.body.delivery).toMatchObject({ pushed: true });

  const reverted = await user.post(`/api/turns/${hostileTurnId}/revert`);
  expect([200, 202, 409], JSON.stringify(reverted.body)).toContain(reverted.status);

  corpus.model.enqueue(
    { toolCalls: [{ name: "write_file", arguments: { path: "next.txt", content: "next\n" } }] },
    { text: "Wrote next.txt." },
  );
  const next = await runTurn(corpus, project.sessionId, "Write next.txt");
  expect(next.events.at(-1), "the next turn").toMatchObject({
    type: "done",
    data: { reason: "completed" },
  });

  // The drone prunes idle worktrees on its own every hour; its code runs here on its workspace.
  const { pruneIdleWorktrees } = await import("gadget-drone");
  await pruneIdleWorktrees({ workspaceRoot: corpus.workspaceRoot, retentionMs: -1 });
  const worktree = worktreeDirectory(corpus.workspaceRoot, project.slug, project.sessionId);
  // Clean worktrees go, dirty ones stay: either way the files the session committed are safe.
  if (!existsSync(path.join(worktree, ".git"))) {
    const again = await user.get(`/api/sessions/${project.sessionId}`);
    expect(again.status).toBe(200);
  }
  return { nextTurn: next.events };
}

/** Nothing appeared in the host directory the hostile programs aimed at. */
export async function expectNothingOutside(corpus: Corpus): Promise<void> {
  expect(await readdir(corpus.outside), "files made outside the sandbox").toEqual([]);
}

/** The drone is still online (it heartbeats, so it is not wedged). */
export async function expectDroneOnline(corpus: Corpus, name: string): Promise<void> {
  await waitFor(
    async () => {
      const drones = await corpus.user.get("/api/drones");
      return (drones.body.drones as Array<{ name: string; status: string }>).some(
        (drone) => drone.name === name && drone.status === "online",
      );
    },
    10_000,
    `drone ${name} still online`,
  );
}

// The stage of the end-to-end tests against a real Gitea: a server, a scripted model, a private
// Gitea with a bot user (the project's forge token, and the drone machine's git credentials), a
// registered drone, and a helper that runs one turn writing one file.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  type GiteaRepository,
  type GiteaUser,
  type RunningGitea,
  startGitea,
} from "@gadget/services";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { inject } from "vitest";
import { type DroneProcess, freshHome, startRegisteredDrone, waitForTurn } from "./helpers.ts";

export interface GiteaStage {
  server: GadgetServer;
  model: ScriptedModel;
  gitea: RunningGitea;
  /** The forge user the server and the drone act as (pushes, pull requests, comments). */
  bot: GiteaUser;
  user: ApiClient;
  drone: DroneProcess;
  providerId: string;
  /** A repository of the admin with the bot as its admin, and a project delivering pull requests to it. */
  project(name: string): Promise<{ repository: GiteaRepository; projectId: string }>;
  /** Runs a turn that writes `file` in the session; waits for it to complete. */
  // biome-ignore lint/suspicious/noExplicitAny: test convenience; assertions check the shape
  runTurn(sessionId: string, prompt: string, file: string): Promise<{ turnId: string; turn: any }>;
  stop(): Promise<void>;
}

/** Starts everything; `name` keeps the database apart from other test files'. */
export async function startGiteaStage(name: string): Promise<GiteaStage> {
  const server = await startTestServer(
    // The forge's API is on loopback: the server may call it.
    { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), allowPrivateNetwork: true },
    `${name}_${process.pid}`,
  );
  const model = await startScriptedModel();
  const gitea = await startGitea();
  const bot = await gitea.createUser("gadget-bot");
  const user = await signup(server.url, name);
  const home = await freshHome();
  // The drone machine's own git credentials: the bot's token, as a person would store theirs.
  await writeFile(path.join(home, ".gitconfig"), "[credential]\n\thelper = store\n");
  await writeFile(
    path.join(home, ".git-credentials"),
    `http://${bot.name}:${bot.token}@${new URL(gitea.url).host}\n`,
    { mode: 0o600 },
  );
  const { drone } = await startRegisteredDrone(user, server.url, `${name}-drone`, { home });
  const providerId: string = (
    await user.post("/api/providers", {
      name: "scripted",
      baseUrl: model.baseUrl,
      apiKey: "sk-x",
      modelId: "scripted-model",
    })
  ).body.provider._id;

  return {
    server,
    model,
    gitea,
    bot,
    user,
    drone,
    providerId,
    async project(projectName) {
      const repository = await gitea.createRepository(projectName);
      // Gitea answers a collaborator's permission only to a repository admin.
      await gitea.addCollaborator(repository, bot, "admin");
      const created = await user.post("/api/projects", {
        name: projectName,
        gitUrl: repository.cloneUrl,
        delivery: "pull-request",
        forge: { kind: "gitea", apiUrl: gitea.apiUrl, token: bot.token },
      });
      if (created.status !== 201) throw new Error(JSON.stringify(created.body));
      return { repository, projectId: created.body.project._id };
    },
    async runTurn(sessionId, prompt, file) {
      model.enqueue(
        { toolCalls: [{ name: "write_file", arguments: { path: file, content: `${prompt}\n` } }] },
        { text: "Written." },
      );
      const created = await user.post(`/api/sessions/${sessionId}/turns`, { prompt, providerId });
      if (created.status !== 202) throw new Error(JSON.stringify(created.body));
      const turnId: string = created.body.turn._id;
      const turn = await waitForTurn(user, turnId, ["completed", "failed", "interrupted"], 60_000);
      return { turnId, turn };
    },
    async stop() {
      drone?.child.kill("SIGKILL");
      await model?.close();
      await server?.close();
      await gitea?.stop();
    },
  };
}

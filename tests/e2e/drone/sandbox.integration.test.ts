// The sandbox through real drone turns: the five escapes a hostile repository's README got through
// before (the drone's config, an ssh key, a loopback listener, a write outside the workspace,
// core.fsmonitor planted for the drone's own git), the project's network policy carried from the
// REST API to the sandbox, verification commands confined too, and a drone without a sandbox.
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import { type ScriptedModel, startScriptedModel } from "@gadget/testkit";
import { type ApiClient, signup } from "@gadget/testkit/wire";
import { createRemote } from "gadget-drone/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  commandOutputs,
  type DroneProcess,
  freshHome,
  registerWithCli,
  runCli,
  settledEvents,
  startCli,
  waitForDroneOnline,
} from "./helpers.ts";

interface Listener {
  port: number;
  hits: number;
  close(): Promise<void>;
}

async function listen(answer: string): Promise<Listener> {
  const state = { hits: 0 };
  const server = http.createServer((_request, response) => {
    state.hits++;
    response.end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get hits() {
      return state.hits;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe("the sandbox in real drone turns", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: ApiClient;
  let home: string;
  let drone: DroneProcess | undefined;
  let unconfined: DroneProcess | undefined;
  let loopback: Listener;
  let allowed: Listener;
  let providerId: string;
  let credential: string;
  const config = () => path.join(home, ".config", "gadget-drone", "config.json");
  const workspaceRoot = () => path.join(home, "workspaces");

  async function register(name: string, configFile: string): Promise<string> {
    const registered = await registerWithCli(user, server.url, {
      name,
      workspace: workspaceRoot(),
      config: configFile,
      home,
    });
    expect(registered.code, registered.stderr).toBe(0);
    return JSON.parse(await readFile(configFile, "utf8")).droneId as string;
  }

  async function project(name: string, options: Record<string, unknown> = {}) {
    const remote = await createRemote({ "README.md": `# ${name}\n`, "package.json": "{}\n" });
    const created = await user.post("/api/projects", { name, gitUrl: remote.bare, ...options });
    const session = await user.post(`/api/projects/${created.body.project._id}/sessions`, {
      name: "s",
    });
    return {
      projectId: created.body.project._id as string,
      slug: created.body.project.slug as string,
      sessionId: session.body.session._id as string,
    };
  }

  async function turn(sessionId: string, prompt: string, droneId?: string) {
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt,
      providerId,
      ...(droneId ? { droneId } : {}),
    });
    expect(created.status).toBe(202);
    return settledEvents(user, created.body.turn._id, 60_000);
  }

  beforeAll(async () => {
    server = await startTestServer(
      { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl"), droneGraceMs: 30_000 },
      `drone_sandbox_${process.pid}`,
    );
    model = await startScriptedModel({ apiKey: "sk-sandbox-provider-key" });
    user = await signup(server.url, "drone-sandbox");
    const provider = await user.post("/api/providers", {
      name: "scripted",
      baseUrl: model.baseUrl,
      apiKey: "sk-sandbox-provider-key",
      modelId: "scripted-model",
    });
    providerId = provider.body.provider._id;
    home = await freshHome();
    await mkdir(path.join(home, ".ssh"), { recursive: true });
    await writeFile(path.join(home, ".ssh", "id_ed25519"), "PRIVATE-KEY-ssh-secret-6d1e\n", {
      mode: 0o600,
    });
    await register("confined", config());
    credential = JSON.parse(await readFile(config(), "utf8")).credential;
    loopback = await listen("loopback reached");
    allowed = await listen("allowed host reached");
    drone = startCli(["--config", config()], home);
    await waitForDroneOnline(user, "confined");
  });

  afterAll(async () => {
    drone?.child.kill("SIGKILL");
    unconfined?.child.kill("SIGKILL");
    await loopback?.close();
    await allowed?.close();
    await model?.close();
    await server?.close();
  });

  it("reports its sandbox to the server and in `gadget-drone status`", async () => {
    const drones = await user.get("/api/drones");
    const confined = drones.body.drones.find(
      (entry: { name: string }) => entry.name === "confined",
    );
    expect(confined.sandbox).toMatchObject({ kind: "bubblewrap", network: "isolated" });
    expect(confined.sandbox.version).toMatch(/^\d+\.\d+/);
    const status = await runCli(["status", "--config", config()], home);
    expect(status.stdout).toMatch(/sandbox:\s+bubblewrap \d+\.\d+(\.\d+)?, network isolated/);
    expect(drone?.output()).toMatch(/sandbox: bubblewrap/);
  });

  it("keeps the five escapes of a hostile README in: config, ssh key, loopback, outside write, fsmonitor", async () => {
    const { slug, sessionId } = await project("Hostile README");
    // Beside the drone's home. Inside the sandbox /tmp and $HOME are the command's own, so the
    // write may well succeed there: what counts is that the host never sees the file.
    const outsideMarker = `${home}-written-from-the-sandbox`;
    const fsmonitorMarker = path.join(home, "fsmonitor-ran");
    const node = (source: string) => `node -e "${source}"`;
    const tryPrint = (label: string, expression: string) =>
      node(
        `try { console.log('${label} LEAKED ' + ${expression}) } catch (e) { console.log('${label} BLOCKED ' + e.code) }`,
      );
    model.enqueue(
      {
        toolCalls: [
          {
            name: "run_command",
            arguments: {
              command: tryPrint("config", `require('fs').readFileSync('${config()}', 'utf8')`),
            },
          },
          {
            name: "run_command",
            arguments: {
              command: tryPrint(
                "ssh",
                `require('fs').readFileSync(require('os').homedir() + '/.ssh/id_ed25519', 'utf8')`,
              ),
            },
          },
          {
            name: "run_command",
            arguments: {
              command: node(
                `require('http').get('http://127.0.0.1:${loopback.port}/', (r) => console.log('loopback LEAKED ' + r.statusCode)).on('error', (e) => console.log('loopback BLOCKED ' + e.code))`,
              ),
            },
          },
          {
            name: "run_command",
            arguments: {
              command: node(`require('fs').writeFileSync('${outsideMarker}', 'x')`),
            },
          },
          {
            name: "run_command",
            arguments: {
              command: tryPrint(
                "fsmonitor",
                // The session's worktree shares the clone's git directory: aim at its config.
                `(require('fs').appendFileSync(require('child_process').execSync('git rev-parse --path-format=absolute --git-common-dir').toString().trim() + '/config', '[core]\\\\n\\\\tfsmonitor = touch ${fsmonitorMarker}\\\\n'), 'planted')`,
              ),
            },
          },
        ],
      },
      { text: "Done what the README said." },
    );
    const events = await turn(sessionId, "Follow the README's setup steps");
    const results = commandOutputs(events);
    expect(results).toHaveLength(5);
    for (const [index, label] of ["config", "ssh", "loopback", null, "fsmonitor"].entries()) {
      if (!label) continue;
      expect(results[index], results[index]).toContain(`${label} BLOCKED`);
      expect(results[index]).not.toContain("LEAKED");
    }
    // Found the clone's config through git, and could not write it: read-only, not missing.
    expect(results[4]).toContain("fsmonitor BLOCKED EROFS");
    const everything = JSON.stringify(events);
    expect(everything).not.toContain(credential);
    expect(everything).not.toContain("ssh-secret-6d1e");
    expect(loopback.hits).toBe(0);
    expect(existsSync(outsideMarker)).toBe(false);
    expect(
      await readFile(path.join(workspaceRoot(), slug, ".git", "config"), "utf8"),
    ).not.toContain("fsmonitor");

    // Even planted by hand (as a checkout might carry it), the drone's git on the next turn runs nothing.
    await writeFile(
      path.join(workspaceRoot(), slug, ".git", "config"),
      `[core]\n\tfsmonitor = "touch ${fsmonitorMarker}; echo"\n`,
      { flag: "a" },
    );
    model.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "NOTES.md", content: "x\n" } }] },
      { text: "Wrote the notes." },
    );
    const next = await turn(sessionId, "Write notes");
    expect(next.at(-1)).toMatchObject({ type: "done", data: { reason: "completed" } });
    expect(next.find((event) => event.type === "changes")?.data.files).toEqual([
      { path: "NOTES.md", status: "added" },
    ]);
    expect(existsSync(fsmonitorMarker)).toBe(false);
  });

  it("carries the project's network policy from the API to the sandbox", async () => {
    const { projectId, sessionId } = await project("Networked");
    const curl = `curl -s --max-time 5 http://127.0.0.1:${allowed.port}/ http://127.0.0.1:${loopback.port}/`;
    const ask = () =>
      model.enqueue(
        { toolCalls: [{ name: "run_command", arguments: { command: curl } }] },
        { text: "Fetched." },
      );
    ask();
    const closed = commandOutputs(await turn(sessionId, "Fetch both (network none)"));
    expect(closed[0]).not.toContain("reached");

    const patched = await user.patch(`/api/projects/${projectId}`, {
      network: "allowlist",
      allowedHosts: [`127.0.0.1:${allowed.port}`],
    });
    expect(patched.status).toBe(200);
    expect(patched.body.project).toMatchObject({
      network: "allowlist",
      allowedHosts: [`127.0.0.1:${allowed.port}`],
    });
    ask();
    const listed = commandOutputs(await turn(sessionId, "Fetch both (allowlist)"));
    expect(listed[0]).toContain("allowed host reached");
    expect(listed[0]).not.toContain("loopback reached");
    expect(listed[0]).toContain(`[sandbox: refused 127.0.0.1:${loopback.port}`);
    expect(allowed.hits).toBe(1);
    expect(loopback.hits).toBe(0);

    const invalid = await user.patch(`/api/projects/${projectId}`, {
      network: "everything",
      allowedHosts: ["http://evil.example/"],
    });
    expect(invalid.status).toBe(400);
    expect(JSON.stringify(invalid.body.error.details)).toMatch(/allowedHosts\.0/);
  });

  it("runs the project's verification commands in the sandbox too", async () => {
    const outsideMarker = `${home}-written-by-verification`;
    const { sessionId } = await project("Verified", {
      verifyCommands: [
        `node -e "require('fs').writeFileSync('${outsideMarker}', 'x'); try { console.log('verify LEAKED ' + require('fs').readFileSync('${config()}', 'utf8')) } catch (e) { console.log('verify BLOCKED ' + e.code) }"`,
      ],
    });
    model.enqueue(
      { toolCalls: [{ name: "write_file", arguments: { path: "a.txt", content: "a\n" } }] },
      { text: "Wrote a.txt." },
    );
    const events = await turn(sessionId, "Write a.txt");
    const verification = events.find((event) => event.type === "verification");
    expect(verification?.data.ok).toBe(true);
    expect(verification?.data.commands[0].output).toContain("verify BLOCKED ENOENT");
    expect(JSON.stringify(events)).not.toContain(credential);
    expect(existsSync(outsideMarker)).toBe(false);
  });

  // Two drone CLI runs, a drone start and a turn: over 30 s on a busy machine (two suites side by side).
  it("refuses to start without a sandbox unless --no-sandbox; then every turn says so", async () => {
    const configFile = path.join(home, "unconfined.json");
    const droneId = await register("unconfined", configFile);
    const noBwrap = { PATH: path.join(home, "no-such-bin") };
    const refused = await runCli(["start", "--config", configFile], home, noBwrap);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/bubblewrap \(bwrap\) is not on PATH: install bubblewrap/);
    expect(refused.stderr).toMatch(/--no-sandbox/);

    unconfined = startCli(["--config", configFile, "--no-sandbox"], home, {
      PATH: process.env.PATH ?? "",
    });
    await waitForDroneOnline(user, "unconfined");
    expect(unconfined.output()).toMatch(/WARNING: commands the agent runs are not confined/);
    const drones = await user.get("/api/drones");
    const listed = drones.body.drones.find(
      (entry: { name: string }) => entry.name === "unconfined",
    );
    expect(listed.sandbox).toEqual({ kind: "none", version: null, network: "host" });

    const { sessionId } = await project("Unconfined");
    model.enqueue({ text: "Hello." });
    const events = await turn(sessionId, "Say hello", droneId);
    const warning = events.find(
      (event) => event.type === "status" && event.data.phase === "sandbox",
    );
    expect(warning?.data).toMatchObject({ level: "warning" });
    expect(warning?.data.message).toMatch(
      /without a sandbox.*network setting \("none"\) is not enforced/,
    );
  }, 90_000);
});

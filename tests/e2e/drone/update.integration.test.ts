// Updates of an installed drone against a real server: installed by /install.sh at 0.1.0, it
// switches to 0.2.0 when the server hands that out, only once its running turn has ended, and
// refuses a broken 0.3.0 (its start check fails), staying on 0.2.0 and taking turns, and rolls
// back a 0.4.0 that passes its check but stops at start. Each refusal reaches the server
// (`GET /api/drones`) and the drones page in Chromium, with its reason.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";
import { readlink } from "node:fs/promises";
import path from "node:path";
import type { GadgetServer } from "@gadget/server";
import { startTestServer } from "@gadget/server/testing";
import {
  makeTempDir,
  makeTempDirSync,
  packBrokenDrone,
  packDrone,
  processesWithArgument,
  type ScriptedModel,
  startScriptedModel,
} from "@gadget/testkit";
import { type Browser, buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { signup, waitFor } from "@gadget/testkit/wire";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { webDir } from "../paths.ts";
import { createProjectSession, waitForTurn } from "./helpers.ts";

const built = makeTempDirSync("drone-packages-");
const first = packDrone(built, "0.1.0");
const second = packDrone(built, "0.2.0");
const broken = packBrokenDrone(built, "0.3.0");
const failsToStart = packBrokenDrone(built, "0.4.0", { failsAt: "start" });
/** What the server hands out: the newest package in this directory. */
const served = makeTempDirSync("served-packages-");
copyFileSync(first, path.join(served, path.basename(first)));

function run(file: string, args: string[], env: Record<string, string>, input?: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(file, args, { env, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

describe("gadget-drone updates", () => {
  let server: GadgetServer;
  let model: ScriptedModel;
  let user: Awaited<ReturnType<typeof signup>>;
  let sessionId: string;
  let providerId: string;
  let env: Record<string, string>;
  let command: string;
  let library: string;
  let drone: ChildProcess;
  let output = "";
  let browser: Browser;

  /** The drones page, signed in as the user, as Chromium shows it. */
  async function dronesPage() {
    const page = browser.page;
    await page.goto(`${server.url}/login`);
    await page.evaluate(
      ({ token, me }) => {
        localStorage.setItem("gadget.token", token);
        localStorage.setItem("gadget.user", me);
      },
      {
        token: user.token ?? "",
        me: JSON.stringify({ _id: user.userId, email: user.email, name: "Updates" }),
      },
    );
    await page.goto(`${server.url}/drones`);
    return page.getByRole("row", { name: /updater/ });
  }

  const droneRow = async () =>
    ((await user.get("/api/drones")).body.drones as Array<Record<string, unknown>>).find(
      (row) => row.name === "updater",
    );

  beforeAll(async () => {
    const outDir = path.join(await makeTempDir("update-web-"), "web");
    await buildApp(webDir, outDir);
    server = await startTestServer({
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      droneGraceMs: 30_000,
      dronePackage: served,
      webDir: outDir,
    });
    browser = await launchBrowser({ viewport: { width: 1440, height: 900 } });
    model = await startScriptedModel();
    user = await signup(server.url, "updates");
    ({ sessionId, providerId } = await createProjectSession(user, {
      name: "Updates",
      modelUrl: model.baseUrl,
    }));
    const home = await makeTempDir("update-home-");
    env = {
      PATH: process.env.PATH ?? "",
      HOME: home,
      TMPDIR: home,
      GADGET_DRONE_UPDATE_CHECK_MS: "300",
    };
    const token = await user.post("/api/drones/registration-tokens");
    const script = await (await fetch(`${server.url}/install.sh`)).text();
    const installed = await run(
      "sh",
      ["-s", "--", "--token", token.body.token, "--name", "updater"],
      env,
      script,
    );
    if (installed.code !== 0) throw new Error(`install failed: ${installed.stderr}`);
    command = path.join(home, ".local/bin/gadget-drone");
    library = path.join(home, ".local/lib/gadget-drone");
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    // The supervisor passes the stop on to the drone it runs, and exits with it.
    if (drone && drone.exitCode === null) {
      const exited = new Promise((resolve) => drone.once("exit", resolve));
      drone.kill("SIGTERM");
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    }
    for (const pid of processesWithArgument(path.join(library, "current/bin/gadget-drone.js"))) {
      process.kill(pid, "SIGKILL");
    }
    drone?.kill("SIGKILL");
    await model?.close();
    await server?.close();
  });

  it("says whether the server hands out a newer version", async () => {
    const checked = await run(command, ["update", "--check"], env);
    expect(checked.stdout).toContain("gadget-drone 0.1.0 is up to date");
    expect(checked.code).toBe(0);
  });

  it("switches to the server's new version between turns, never during one", async () => {
    drone = spawn(command, ["start", "--auto-update"], { env, detached: false });
    drone.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    drone.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    await waitFor(async () => (await droneRow())?.status === "online", 30_000, "drone online");

    // A turn that runs until the test lets it finish.
    let finish: () => void = () => {};
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    model.enqueue(async () => {
      await finished;
      return { text: "Done on the version the turn started on." };
    });
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Take your time",
      providerId,
    });
    await model.waitForRequests(1, 20_000);

    copyFileSync(second, path.join(served, path.basename(second)));
    await waitFor(
      async () => output.includes("gadget-drone 0.2.0 is ready; switching once no turn runs"),
      30_000,
      "the update staged",
    );
    // Staged, and still the old version while the turn runs.
    expect(await droneRow()).toMatchObject({ version: "0.1.0", status: "online", activeTurns: 1 });
    expect(await readlink(path.join(library, "current"))).toBe("versions/0.1.0");

    finish();
    const turn = await waitForTurn(user, created.body.turn._id, [
      "completed",
      "failed",
      "interrupted",
      "cancelled",
    ]);
    expect(turn.status).toBe("completed");
    await waitFor(
      async () => {
        const row = await droneRow();
        return row?.version === "0.2.0" && row.status === "online";
      },
      30_000,
      "the drone back online as 0.2.0",
    );
    expect(await readlink(path.join(library, "current"))).toBe("versions/0.2.0");
    expect(output).toContain("update: switched to gadget-drone 0.2.0; restarting");
  }, 90_000);

  it("refuses a broken package: it fails its start check, and the drone stays on 0.2.0 taking turns", async () => {
    copyFileSync(broken, path.join(served, path.basename(broken)));
    await waitFor(
      async () => output.includes("update refused: gadget-drone 0.3.0 failed its start check"),
      30_000,
      "the broken update refused",
    );
    expect(output).toContain("this gadget-drone build is broken");
    expect(await readlink(path.join(library, "current"))).toBe("versions/0.2.0");
    expect(existsSync(path.join(library, "versions/0.3.0"))).toBe(false);

    // By hand, the same refusal; nothing switches.
    const manual = await run(command, ["update"], env);
    expect(manual.code).toBe(1);
    expect(manual.stderr).toContain("gadget-drone 0.3.0 failed its start check");
    expect(await readlink(path.join(library, "current"))).toBe("versions/0.2.0");

    model.enqueue({ text: "Still here on 0.2.0." });
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Still there?",
      providerId,
    });
    const turn = await waitForTurn(user, created.body.turn._id, [
      "completed",
      "failed",
      "interrupted",
      "cancelled",
    ]);
    expect(turn.status).toBe("completed");
    expect(await droneRow()).toMatchObject({ version: "0.2.0", status: "online" });

    // The server heard, with the reason; the drones page shows it under the version.
    const refused = (await droneRow())?.updateRefused as Record<string, string> | null;
    expect(refused).toMatchObject({ version: "0.3.0" });
    expect(refused?.reason).toContain("gadget-drone 0.3.0 failed its start check");
    expect(refused?.reason).toContain("this gadget-drone build is broken");
    expect(Date.parse(refused?.at ?? "")).toBeGreaterThan(Date.now() - 60_000);
    const row = await dronesPage();
    await row.getByText("update refused").waitFor({ timeout: 20_000 });
    // The refusal came before the manual update and a whole turn: on a loaded machine that is
    // more than the ten seconds "just now" covers.
    expect(await row.textContent()).toMatch(
      /0\.3\.0, (just now|\d+ s ago): gadget-drone 0\.3\.0 failed its start check/,
    );
  }, 90_000);

  it("rolls back a version that passes its check but stops at start, and does not try it again", async () => {
    copyFileSync(failsToStart, path.join(served, path.basename(failsToStart)));
    await waitFor(
      async () =>
        output.includes(
          "update: gadget-drone 0.4.0 stopped at start (exit 1); rolled back to 0.2.0",
        ),
      30_000,
      "the failed start rolled back",
    );
    expect(output).toContain("this gadget-drone build cannot start");
    expect(await readlink(path.join(library, "current"))).toBe("versions/0.2.0");
    await waitFor(
      async () => {
        const row = await droneRow();
        return row?.version === "0.2.0" && row.status === "online";
      },
      30_000,
      "0.2.0 online again",
    );
    await waitFor(
      async () => output.includes("gadget-drone 0.4.0 was refused before"),
      10_000,
      "0.4.0 not tried again",
    );
    model.enqueue({ text: "Back on 0.2.0." });
    const created = await user.post(`/api/sessions/${sessionId}/turns`, {
      prompt: "Back?",
      providerId,
    });
    const turn = await waitForTurn(user, created.body.turn._id, [
      "completed",
      "failed",
      "interrupted",
      "cancelled",
    ]);
    expect(turn.status).toBe("completed");

    // The rollback reached the server and the drones page, with its reason.
    expect((await droneRow())?.updateRefused).toMatchObject({
      version: "0.4.0",
      reason: "it stopped at start (exit 1) and was rolled back to 0.2.0",
    });
    const row = await dronesPage();
    await expect
      .poll(async () => (await row.textContent()) ?? "", { timeout: 20_000 })
      .toContain("update refused 0.4.0");
    expect(await row.textContent()).toContain(
      "it stopped at start (exit 1) and was rolled back to 0.2.0",
    );
    await screenshot(browser.page, "drone-update-refused");
  }, 90_000);
});

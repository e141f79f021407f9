// A sandbox whose drone died before bwrap armed --die-with-parent is ended by the next start.
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectSandbox } from "./detect.ts";
import { endOrphanedSandboxes, sandboxTag } from "./orphans.ts";
import type { Sandbox } from "./sandbox.ts";

let base: string;
let sandbox: Sandbox;

/** Whether a process with `word` on its command line runs (pgrep -f). */
function running(word: string): Promise<boolean> {
  return new Promise((resolve) =>
    spawn("pgrep", ["-f", word]).on("exit", (code) => resolve(code === 0)),
  );
}

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "gadget-orphans-"));
  await mkdir(path.join(base, "workspace"));
  const detection = await detectSandbox({
    layout: {
      home: path.join(base, "home"),
      searchPath: ["/usr/bin", "/bin"],
      nodePath: process.execPath,
      uid: process.getuid?.() ?? -1,
    },
    hidden: [],
    runtimeDirectory: path.join(base, "run"),
  });
  if (!detection.ok) throw new Error(detection.problem);
  sandbox = detection.sandbox;
});

afterAll(async () => {
  if (base) await rm(base, { recursive: true, force: true });
});

describe("orphaned sandboxes", () => {
  it("ends a sandbox whose drone died while it was starting, and only this drone's", async () => {
    const word = `73.${process.pid}`;
    const prepared = await sandbox.prepare(
      { argv: ["sleep", word], cwd: path.join(base, "workspace"), env: { PATH: "/usr/bin:/bin" } },
      {
        workspace: path.join(base, "workspace"),
        home: path.join(base, "private-home"),
        network: { mode: "none", allowedHosts: [] },
        hidden: [],
      },
    );
    // The race, made certain: the spawning process is gone before bwrap starts (it waits 0.3 s),
    // so bwrap arms its parent-death signal against init, which never dies.
    const launcher = `const { spawn } = require("node:child_process"); spawn("/bin/sh", ["-c", 'sleep 0.3; exec "$@"', "sh", ...JSON.parse(process.argv[1])], { detached: true, stdio: "ignore", env: JSON.parse(process.argv[2]) }).unref();`;
    await new Promise((resolve) =>
      spawn(process.execPath, [
        "-e",
        launcher,
        JSON.stringify(prepared.argv),
        JSON.stringify(prepared.env),
      ]).on("exit", resolve),
    );
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(await running(word)).toBe(true);

    expect(await endOrphanedSandboxes("another-drone")).toBe(0);
    expect(await running(word)).toBe(true);
    expect(await endOrphanedSandboxes(sandboxTag(path.join(base, "run")))).toBeGreaterThan(0);
    for (let waited = 0; (await running(word)) && waited < 3_000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await running(word)).toBe(false);
    await prepared.finish();
  });
});

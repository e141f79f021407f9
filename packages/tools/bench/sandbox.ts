// What the sandbox costs a command: bare spawns against sandboxed ones, measured in the same run
// (these machines are noisy; compare the ratios). Prints a markdown table.
//   per-command overhead of `true` and `node -e 0` (spawn level and through run_command's runner)
//   a 20,000-file workspace walked by `node test.js`, bare and sandboxed
//   a turn's first command: the drone's sandbox check at start, a new project's first command, later ones
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { confine, detectSandbox, type HostLayout, type Sandbox } from "@gadget/sandbox";
import { percentile } from "@gadget/testkit/measure";
import { runCommand } from "../src/index.ts";

const runs = Number(process.env.BENCH_RUNS ?? 200);
const warmup = 20;

function spawnAndWait(argv: string[], cwd: string, env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd,
      env,
      stdio: "ignore",
      detached: true,
    });
    child.on("error", reject);
    child.on("exit", (code) => resolve(code ?? -1));
  });
}

async function measure(count: number, work: () => Promise<unknown>): Promise<number[]> {
  for (let index = 0; index < warmup; index++) await work();
  const samples: number[] = [];
  for (let index = 0; index < count; index++) {
    const started = performance.now();
    await work();
    samples.push(performance.now() - started);
  }
  return samples;
}

const format = (value: number) => value.toFixed(1);

async function main(): Promise<void> {
  const base = await mkdtemp(path.join(os.tmpdir(), "gadget-sandbox-bench-"));
  try {
    const workspace = path.join(base, "workspace");
    await mkdir(workspace);
    const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: os.homedir(), LANG: "C.UTF-8" };
    const layout: HostLayout = {
      home: os.homedir(),
      searchPath: (process.env.PATH ?? "").split(path.delimiter),
      nodePath: process.execPath,
      uid: process.getuid?.() ?? -1,
    };
    const startedDetection = performance.now();
    const detection = await detectSandbox({
      layout,
      hidden: [],
      runtimeDirectory: path.join(base, "run"),
    });
    const detectionMs = performance.now() - startedDetection;
    if (!detection.ok) throw new Error(detection.problem);
    const sandbox: Sandbox = detection.sandbox;
    const policy = (home: string, mode: "none" | "allowlist" = "none") => ({
      workspace,
      home,
      network: { mode, allowedHosts: [] },
      hidden: [path.join(base, "run")],
    });

    const rows: string[][] = [];
    const row = (name: string, bare: number[], confined: number[], target: string) => {
      const ratio = percentile(confined, 50) / percentile(bare, 50);
      rows.push([
        name,
        `${format(percentile(bare, 50))} / ${format(percentile(bare, 95))}`,
        `${format(percentile(confined, 50))} / ${format(percentile(confined, 95))}`,
        `+${format(percentile(confined, 50) - percentile(bare, 50))} (${ratio.toFixed(2)}×)`,
        target,
      ]);
    };

    const spawnConfined = async (argv: string[], mode: "none" | "allowlist" = "none") => {
      const prepared = await sandbox.prepare(
        { argv, cwd: workspace, env },
        policy(path.join(base, "home"), mode),
      );
      await spawnAndWait(prepared.argv, workspace, prepared.env);
      await prepared.finish();
    };
    for (const [name, argv, target] of [
      ["`true`", ["true"], "≤ +15 ms p50"],
      ["`node -e 0`", [process.execPath, "-e", "0"], "≤ 1.5×"],
    ] as const) {
      const bare = await measure(runs, () => spawnAndWait([...argv], workspace, env));
      const confined = await measure(runs, () => spawnConfined([...argv]));
      row(`${name}, spawn`, bare, confined, target);
    }
    const allowlisted = await measure(Math.min(runs, 100), () =>
      spawnConfined(["true"], "allowlist"),
    );
    const bareTrue = await measure(Math.min(runs, 100), () =>
      spawnAndWait(["true"], workspace, env),
    );
    row("`true`, network allowlist (proxy + bridge)", bareTrue, allowlisted, "");

    const confinement = confine(sandbox, policy(path.join(base, "home")));
    for (const command of ["true", "node -e 0"]) {
      const bare = await measure(Math.min(runs, 100), () =>
        runCommand(command, { workspace, env }),
      );
      const confined = await measure(Math.min(runs, 100), () =>
        runCommand(command, { workspace, env, sandbox: confinement }),
      );
      row(`\`${command}\` through run_command's runner`, bare, confined, "");
    }

    // A 20,000-file workspace: the sandbox binds it, it does not copy it.
    const big = path.join(base, "big");
    for (let directory = 0; directory < 200; directory++) {
      const folder = path.join(big, "src", `module-${directory}`);
      await mkdir(folder, { recursive: true });
      await Promise.all(
        Array.from({ length: 100 }, (_, file) =>
          writeFile(
            path.join(folder, `file-${file}.js`),
            `export const value${file} = ${directory * 100 + file};\n`,
          ),
        ),
      );
    }
    await writeFile(
      path.join(big, "test.js"),
      `const fs = require("node:fs"); const path = require("node:path");
let files = 0, bytes = 0;
const walk = (dir) => { for (const entry of fs.readdirSync(dir, { withFileTypes: true })) { const full = path.join(dir, entry.name); if (entry.isDirectory()) walk(full); else { files++; bytes += fs.readFileSync(full).length; } } };
walk("src"); if (files !== 20000) process.exit(1);`,
    );
    const walkRuns = Math.max(5, Math.min(20, Math.floor(runs / 10)));
    const bigPolicy = { ...policy(path.join(base, "home")), workspace: big };
    const bareWalk = await measure(walkRuns, () =>
      spawnAndWait([process.execPath, "test.js"], big, env),
    );
    const confinedWalk = await measure(walkRuns, async () => {
      const prepared = await sandbox.prepare(
        { argv: [process.execPath, "test.js"], cwd: big, env },
        bigPolicy,
      );
      const code = await spawnAndWait(prepared.argv, big, prepared.env);
      await prepared.finish();
      if (code !== 0) throw new Error("the walk failed in the sandbox");
    });
    row(
      "20,000-file workspace, `node test.js` (reads every file)",
      bareWalk,
      confinedWalk,
      "unchanged within noise",
    );

    // A turn's first command on a drone: a project never seen (its private HOME is created), then later ones.
    const firsts: number[] = [];
    const laters: number[] = [];
    for (let project = 0; project < 20; project++) {
      const home = path.join(base, "homes", `project-${project}`);
      for (let command = 0; command < 3; command++) {
        const started = performance.now();
        const prepared = await sandbox.prepare(
          { argv: ["true"], cwd: workspace, env },
          policy(home),
        );
        await spawnAndWait(prepared.argv, workspace, prepared.env);
        await prepared.finish();
        (command === 0 ? firsts : laters).push(performance.now() - started);
      }
    }

    console.log(
      `\n### Sandbox (${sandbox.info.kind} ${sandbox.info.version ?? ""}, process limit: ${detection.processLimit}), ${runs} runs each after ${warmup} warm-up\n`,
    );
    console.log("| command | bare p50 / p95 ms | sandboxed p50 / p95 ms | added p50 | target |");
    console.log("|---|---|---|---|---|");
    for (const cells of rows) console.log(`| ${cells.join(" | ")} |`);
    console.log("\n| a turn's first command | ms |");
    console.log("|---|---|");
    console.log(
      `| the drone's sandbox check at start (find bwrap, plan the view, run one confined \`true\`) | ${format(detectionMs)} |`,
    );
    console.log(
      `| a new project's first command (cold: its private HOME created), p50 / p95 | ${format(percentile(firsts, 50))} / ${format(percentile(firsts, 95))} |`,
    );
    console.log(
      `| the project's later commands (warm), p50 / p95 | ${format(percentile(laters, 50))} / ${format(percentile(laters, 95))} |`,
    );
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

await main();

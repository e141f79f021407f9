// gadget-drone: the CLI a developer runs to lend this machine to Gadget Code.
import { readFileSync } from "node:fs";
import { GadgetError } from "@gadget/protocol";
import { Command, InvalidArgumentError, Option } from "commander";
import { register } from "./commands/register.ts";
import { type ServiceAction, service } from "./commands/service.ts";
import { start } from "./commands/start.ts";
import { status } from "./commands/status.ts";
import { unregister } from "./commands/unregister.ts";
import { update } from "./commands/update.ts";
import {
  defaultConfigFile,
  defaultWorkspaceRoot,
  heartbeatMs,
  isSupervised,
  logLevel,
  maxQuotaWaitMs,
  mcpIdleMinutes,
  mcpTimeoutSeconds,
  patienceMs,
  updateCheckMs,
  worktreeRetentionDays,
} from "./env.ts";
import { collectLabel } from "./labels.ts";
import { findInstallation } from "./update/installation.ts";
import { stopWithSupervisor, supervise } from "./update/supervisor.ts";

/** The package's version: published, package.json sits beside main.js; in the repository, one folder up. */
function packageVersion(): string {
  for (const candidate of ["./package.json", "../package.json"]) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(candidate, import.meta.url), "utf8"));
      if (manifest.name === "gadget-drone") return String(manifest.version);
    } catch {
      // try the next place
    }
  }
  return "unknown";
}

const version = packageVersion();

function positiveNumber(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) {
    throw new InvalidArgumentError("must be a number above 0");
  }
  return number;
}

function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1 || number > 64) {
    throw new InvalidArgumentError("must be a whole number from 1 to 64");
  }
  return number;
}

/**
 * Runs a command, turning any error into one line on stderr and exit code 1. The process exits
 * when the command is done: idle keep-alive connections (the model client's pool) must not hold it.
 */
async function run(work: () => Promise<number | string | string[]>): Promise<void> {
  let code = 0;
  try {
    const result = await work();
    if (typeof result === "number") code = result;
    else console.log(Array.isArray(result) ? result.join("\n") : result);
  } catch (error) {
    const message =
      error instanceof GadgetError || error instanceof Error ? error.message : String(error);
    console.error(`gadget-drone: ${message}`);
    code = 1;
  }
  process.exit(code);
}

const program = new Command()
  .name("gadget-drone")
  .description(
    "Runs Gadget Code's AI work orders on this machine: clones projects, runs the agent, streams every step.",
  )
  .version(version);

program
  .command("register")
  .description(
    'Register this machine with a gadget-code server, using a token from the web IDE\'s "Add a drone".',
  )
  .requiredOption("--server <url>", "the gadget-code server, e.g. http://127.0.0.1:3000")
  .requiredOption("--token <token>", "the single-use registration token (valid 15 minutes)")
  .option(
    "--name <name>",
    "how the drone appears in the web IDE (default: this machine's hostname)",
  )
  .option("--workspace <dir>", "where project checkouts live", defaultWorkspaceRoot())
  .option("--capacity <n>", "turns this drone runs at once", positiveInteger, 2)
  .option("--config <file>", "config file to write", defaultConfigFile())
  .option("--force", "replace a config that registers this machine with another server", false)
  .option(
    "--label <label>",
    "a label turns may require, key=value or key (repeatable); os, arch and sandbox are added",
    collectLabel,
  )
  .action((options) => run(() => register({ ...options, version })));

program
  .command("start")
  .description(
    "Connect and run work orders until stopped. Ctrl-C once: finish running turns, then exit; twice: cancel them.",
  )
  .option("--config <file>", "config file", defaultConfigFile())
  .option("--json", "JSON log lines on stdout instead of the status display", false)
  .option(
    "--no-sandbox",
    "run the agent's commands without an operating-system sandbox, as your own user (only where bwrap or sandbox-exec cannot run)",
  )
  .option(
    "--ephemeral",
    "take exactly one turn, see it through, then exit 0 (and unregister)",
    false,
  )
  .option(
    "--worktree-retention-days <days>",
    "remove a session's worktree after this many days unused; its branch stays (default: the config's worktreeRetentionDays, else 7)",
    positiveNumber,
  )
  .option(
    "--mcp-idle-minutes <minutes>",
    "stop a session's MCP servers after this many minutes without a turn (default: the config's mcpIdleMinutes, else 10)",
    positiveNumber,
  )
  .option(
    "--mcp-timeout-seconds <seconds>",
    "how long an MCP server may take to start and list its tools before the turn goes on without it (default: the config's mcpTimeoutSeconds, else 10)",
    positiveNumber,
  )
  .option(
    "--auto-update",
    "update itself from its server between turns: verified, started beside this version, rolled back if it fails its start check",
    false,
  )
  .action(
    ({
      sandbox,
      worktreeRetentionDays: retentionDays,
      mcpIdleMinutes: idle,
      mcpTimeoutSeconds: timeout,
      autoUpdate,
      ...options
    }) =>
      run(async () => {
        const installation = autoUpdate ? findInstallation(process.argv[1] ?? "") : null;
        if (autoUpdate && !installation) {
          console.error(
            "gadget-drone: --auto-update needs an installation made by the server's /install.sh; running without it",
          );
        }
        // The person's (or the service's) process supervises; the drone it runs does the work.
        if (installation && !isSupervised()) {
          const args = process.argv.slice(process.argv.indexOf("start") + 1);
          return supervise(installation, args, (line) => console.error(`gadget-drone: ${line}`));
        }
        if (installation) stopWithSupervisor();
        return start({
          ...options,
          autoUpdate: installation ? { installation, intervalMs: updateCheckMs() } : undefined,
          worktreeRetentionDays: retentionDays ?? worktreeRetentionDays(),
          mcpIdleMinutes: idle ?? mcpIdleMinutes(),
          mcpTimeoutSeconds: timeout ?? mcpTimeoutSeconds(),
          noSandbox: sandbox === false,
          version,
          logLevel: logLevel(),
          heartbeatMs: heartbeatMs(),
          patienceMs: patienceMs(),
          maxQuotaWaitMs: maxQuotaWaitMs(),
        });
      }),
  );

program
  .command("update")
  .description(
    "Install the package the drone's server hands out: verified, beside this version, switched to when its start check passes.",
  )
  .option("--check", "only say whether the server hands out a newer version", false)
  .option("--config <file>", "config file (names the server)", defaultConfigFile())
  .action((options) =>
    run(() =>
      update({
        config: options.config,
        check: options.check,
        command: process.argv[1] ?? "",
        version,
      }),
    ),
  );

program
  .command("status")
  .description("Show the config, whether the server answers, and the turns running now.")
  .option("--config <file>", "config file", defaultConfigFile())
  .action((options) => run(() => status(options.config)));

program
  .command("unregister")
  .description("Revoke this drone's credential on the server and delete the local config.")
  .option("--config <file>", "config file", defaultConfigFile())
  .action((options) => run(() => unregister(options.config)));

program
  .command("service")
  .description(
    "Run the drone as your service: a systemd user unit (Linux) or a launchd agent (macOS) that runs gadget-drone start.",
  )
  .argument("<action>", "install, uninstall or status", (value: string) => {
    if (!["install", "uninstall", "status"].includes(value)) {
      throw new InvalidArgumentError("must be install, uninstall or status");
    }
    return value as ServiceAction;
  })
  .option("--config <file>", "config file of the drone it runs", defaultConfigFile())
  .option("--print", "write the unit (or plist) to stdout instead of installing it", false)
  .option("--no-auto-update", "do not update itself between turns from its server")
  .addOption(
    new Option("--platform <platform>", "which service manager's file")
      .default(process.platform)
      .hideHelp(),
  )
  .action((action: ServiceAction, options) =>
    run(async () => {
      const outcome = await service(action, {
        config: options.config,
        print: options.print,
        autoUpdate: options.autoUpdate,
        platform: options.platform,
        node: process.execPath,
        command: process.argv[1] ?? "gadget-drone",
      });
      (outcome.code === 0 ? console.log : console.error)(outcome.output);
      return outcome.code;
    }),
  );

await program.parseAsync(process.argv);

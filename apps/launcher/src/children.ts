// The processes `pnpm start` runs: each in its own process group (so the terminal's Ctrl-C reaches
// only the launcher, which stops them in order), with its output in a log file.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";

export interface ChildOptions {
  /** Shown to people: "server", "drone". */
  name: string;
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  logFile: string;
}

/** A supervised child: `exited` settles when it ends, however that happens. */
export class Child {
  readonly name: string;
  readonly logFile: string;
  readonly process: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private running = true;

  constructor(options: ChildOptions) {
    this.name = options.name;
    this.logFile = options.logFile;
    const log = openSync(options.logFile, "a");
    this.process = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", log, log],
    });
    closeSync(log);
    this.exited = new Promise((resolve) => {
      this.process.once("exit", (code, signal) => {
        this.running = false;
        resolve({ code, signal });
      });
      this.process.once("error", () => {
        this.running = false;
        resolve({ code: null, signal: null });
      });
    });
  }

  get pid(): number {
    return this.process.pid ?? -1;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Sends `signal` to the child's whole process group (its own children too). */
  signal(signal: NodeJS.Signals): void {
    if (!this.running || this.pid < 0) return;
    try {
      process.kill(-this.pid, signal);
    } catch {
      // Already gone.
    }
  }

  /**
   * SIGTERM, then `signals` more after each `graceMs` (the drone cancels its turns on the second),
   * then SIGKILL. Resolves when the child is gone.
   */
  async stop(graceMs: number, extraTerms = 0): Promise<void> {
    const steps: NodeJS.Signals[] = ["SIGTERM", ...Array(extraTerms).fill("SIGTERM"), "SIGKILL"];
    for (const step of steps) {
      if (!this.running) return;
      this.signal(step);
      const ended = await Promise.race([
        this.exited.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), graceMs).unref()),
      ]);
      if (ended) break;
    }
    // Whatever the child left in its group (a tool command, a service) goes too.
    try {
      process.kill(-this.pid, "SIGKILL");
    } catch {
      // The group is empty.
    }
  }

  /** The last lines of the child's log, for a failure message. */
  tail(lines = 15): string {
    try {
      return readFileSync(this.logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } catch {
      return "";
    }
  }
}

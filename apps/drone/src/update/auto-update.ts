// `start --auto-update`, inside the running drone: asks the server for a newer package now and
// then, stages it beside the running version (verified, start-checked), and says when it is ready;
// the drone switches to it once no turn runs (commands/start.ts) and its supervisor restarts it.
// A refusal (sha256, start check, a rollback by the supervisor) is passed on for the server.
import { stat } from "node:fs/promises";
import type { Logger } from "@gadget/logging";
import { type DroneUpdateRefusal, GadgetError } from "@gadget/protocol";
import type { Installation } from "./installation.ts";
import {
  fetchPackageInfo,
  isNewer,
  refusalFile,
  refusedBefore,
  stageUpdate,
} from "./package-update.ts";

export interface AutoUpdaterSettings {
  installation: Installation;
  server: string;
  intervalMs: number;
  logger: Logger;
  /** A line for the person watching the terminal. */
  say: (line: string) => void;
  /** An update refused (once per version and reason): the drone tells the server. */
  onRefused?: (refusal: DroneUpdateRefusal) => void;
}

export class AutoUpdater {
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private done = false;
  private readonly told = new Set<string>();
  /** The refusal passed on last, so a package refused again each check is reported once. */
  private reported = "";
  private announce: (version: string) => void = () => {};
  /** Resolves with a version staged and checked, ready to switch to. */
  readonly ready = new Promise<string>((resolve) => {
    this.announce = resolve;
  });

  constructor(private readonly settings: AutoUpdaterSettings) {}

  start(): void {
    void this.check();
    this.timer = setInterval(() => void this.check(), this.settings.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async check(): Promise<void> {
    if (this.checking || this.done) return;
    this.checking = true;
    const { installation, server, logger, say } = this.settings;
    let version: string | undefined;
    try {
      const info = await fetchPackageInfo(server);
      version = info.version;
      if (!isNewer(info, installation.version)) return;
      const refused = await refusedBefore(installation, info.version);
      if (refused) {
        if (!this.told.has(info.version)) {
          this.told.add(info.version);
          say(
            `update: gadget-drone ${info.version} was refused before (${refused.trim()}); staying on ${installation.version}`,
          );
          const when = await stat(refusalFile(installation, info.version)).catch(() => null);
          this.refused(info.version, refused.trim(), when?.mtime ?? new Date());
        }
        return;
      }
      say(`update: the server hands out gadget-drone ${info.version}; fetching it`);
      await stageUpdate(installation, server, info);
      this.done = true;
      this.stop();
      this.announce(info.version);
    } catch (error) {
      const refusal = error instanceof GadgetError && error.code === "update_refused";
      if (refusal) {
        say(`update refused: ${error.message}`);
        if (version) {
          // Reported with these words: the refusal file's shorter ones are for a later start.
          this.told.add(version);
          this.refused(version, error.message, new Date());
        }
      }
      logger[refusal ? "warn" : "debug"]({ err: error }, "update check");
    } finally {
      this.checking = false;
    }
  }

  private refused(version: string, reason: string, at: Date): void {
    const key = `${version}\n${reason}`;
    if (key === this.reported) return;
    this.reported = key;
    this.settings.onRefused?.({ version, reason: reason.slice(0, 2000), at });
  }
}

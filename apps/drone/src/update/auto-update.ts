// `start --auto-update`, inside the running drone: asks the server for a newer package now and
// then, stages it beside the running version (verified, start-checked), and says when it is ready;
// the drone switches to it once no turn runs (commands/start.ts) and its supervisor restarts it.
import type { Logger } from "@gadget/logging";
import { GadgetError } from "@gadget/protocol";
import type { Installation } from "./installation.ts";
import { fetchPackageInfo, isNewer, refusedBefore, stageUpdate } from "./package-update.ts";

export interface AutoUpdaterSettings {
  installation: Installation;
  server: string;
  intervalMs: number;
  logger: Logger;
  /** A line for the person watching the terminal. */
  say: (line: string) => void;
}

export class AutoUpdater {
  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private done = false;
  private readonly told = new Set<string>();
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
    try {
      const info = await fetchPackageInfo(server);
      if (!isNewer(info, installation.version)) return;
      const refused = await refusedBefore(installation, info.version);
      if (refused) {
        if (!this.told.has(info.version)) {
          this.told.add(info.version);
          say(
            `update: gadget-drone ${info.version} was refused before (${refused.trim()}); staying on ${installation.version}`,
          );
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
      if (refusal) say(`update refused: ${error.message}`);
      logger[refusal ? "warn" : "debug"]({ err: error }, "update check");
    } finally {
      this.checking = false;
    }
  }
}

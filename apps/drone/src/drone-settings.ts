// What a Drone is built with: its config, sandbox, journal place, timings and callbacks (the
// composition root, `commands/start.ts`, fills them in).
import type { EngineLogger, TurnOptions } from "@gadget/agent";
import type { Sandbox } from "@gadget/sandbox";
import type { DroneConfig } from "./config.ts";
import type { McpManager } from "./mcp/mcp-manager.ts";
import type { TurnProgress } from "./turn/progress.ts";
import type { TurnRunnerSettings } from "./turn-runner.ts";

export interface DroneSettings {
  config: DroneConfig;
  /** What confines every command of every turn (`Unconfined` only with --no-sandbox). */
  sandbox: Sandbox;
  /** The drone's own directories, never visible to a command (config, workspaces, runtime). */
  hiddenPaths: readonly string[];
  /** The projects' MCP servers, kept per session (the composition root stops them at the end). */
  mcp?: McpManager;
  /** Where unacknowledged events are kept; default `<workspace>/.journal`. */
  journalDirectory?: string;
  version: string;
  hostname: string;
  platform: string;
  logger: EngineLogger;
  /** Heartbeat period (renews the server's lease on running turns); default 10 000 ms. */
  heartbeatMs?: number;
  /** Reconnect backoff bounds; default 1 s → 60 s with jitter. */
  reconnectDelayMs?: number;
  reconnectDelayMaxMs?: number;
  tunables?: TurnOptions["tunables"];
  /** How events are sent (patience with an unavailable server: default 5 minutes). */
  sending?: TurnRunnerSettings["sending"];
  verifyRepairAttempts?: number;
  onProgress?: (progress: TurnProgress) => void;
  onTurnFinished?: (turnId: string) => void;
  /** The connection state changed; `reason` says why when it is down. */
  onConnection?: (state: { connected: boolean; reason?: string }) => void;
  /** What the drone says about itself (`os`, `arch`, `sandbox`), for turns that require labels. */
  labels?: string[];
  /** `start --ephemeral`: one turn, then `spent` resolves and the drone takes no other. */
  ephemeral?: boolean;
  /**
   * How long a graceful shutdown waits for running turns before cancelling them; default 10
   * minutes. After cancelling, their events get `eventsGraceMs` (default 10 s) to reach the
   * server; what does not stays journaled for the next start. Together they bound a shutdown.
   */
  drainMs?: number;
  eventsGraceMs?: number;
}

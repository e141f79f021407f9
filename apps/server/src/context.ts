// Everything a server instance's parts share, built once in server.ts.
import type { Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type {
  DroneClientToServerEvents,
  DroneServerToClientEvents,
  IdeClientToServerEvents,
  IdeServerToClientEvents,
} from "@gadget/protocol";
import type { Redis } from "ioredis";
import type { Namespace } from "socket.io";
import type { ResolvedConfig } from "./config.ts";
import type { SecretBox } from "./crypto/secret-box.ts";
import type { Dispatcher } from "./dispatch/dispatcher.ts";
import type { PresenceStore } from "./drones/presence.ts";
import type { Metrics } from "./metrics/metrics.ts";
import type { Locks } from "./redis/locks.ts";
import type { EventWriter } from "./turns/event-writer.ts";
import type { LiveRelay } from "./turns/live-relay.ts";
import type { SeqStore } from "./turns/seq-store.ts";
import type { TurnAccumulator } from "./turns/turn-accumulator.ts";
import type { TurnIndex } from "./turns/turn-index.ts";
import type { TurnStore } from "./turns/turn-store.ts";

export interface DroneSocketData {
  droneId: string;
  userId: string;
  droneName: string;
}

export interface IdeSocketData {
  userId: string;
}

export type DronesNamespace = Namespace<
  DroneClientToServerEvents,
  DroneServerToClientEvents,
  Record<string, never>,
  DroneSocketData
>;
export type IdeNamespace = Namespace<
  IdeClientToServerEvents,
  IdeServerToClientEvents,
  Record<string, never>,
  IdeSocketData
>;

export interface ServerContext {
  config: ResolvedConfig;
  /** The URL put into `gadget-drone register` commands. */
  publicUrl: string;
  logger: Logger;
  models: Models;
  /** For commands (not subscriptions). */
  redis: Redis;
  locks: Locks;
  presence: PresenceStore;
  relay: LiveRelay;
  store: TurnStore;
  turnIndex: TurnIndex;
  seqs: SeqStore;
  eventWriter: EventWriter;
  accumulator: TurnAccumulator;
  /** Session and user of turns this process ingests for (immutable, so cached). */
  turnMeta: Map<string, { sessionId: string; userId: string }>;
  /** Per turn, the last ingested batch still being applied and relayed (keeps seq order). */
  turnChains: Map<string, Promise<void>>;
  dispatcher: Dispatcher;
  drones: DronesNamespace;
  ide: IdeNamespace;
  metrics: Metrics;
  secretBox: SecretBox;
  /** False once shutdown began: readiness fails and no new work is taken. */
  accepting: boolean;
  /** Work started by socket events that shutdown waits for. */
  background: Set<Promise<unknown>>;
}

export const droneRoom = (droneId: string) => `drone:${droneId}`;
export const userRoom = (userId: string) => `user:${userId}`;

// The /drones namespace: drones authenticate with their credential, keep presence, receive work
// orders and control messages in their room `drone:<id>` (reachable from any server through the
// Redis adapter), and stream turn events, checkpoints and heartbeats.
import type { DroneDocument, Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import {
  droneHandshakeSchema,
  droneUpdateRefusalSchema,
  heartbeatSchema,
  isCompatibleProtocol,
  mergeLabels,
  PROTOCOL_VERSION,
  RELEASE_VERSION,
  turnCheckpointSchema,
  turnEventBatchSchema,
} from "@gadget/protocol";
import type { ResolvedConfig } from "../config.ts";
import { sha256 } from "../crypto/tokens.ts";
import type { Dispatcher } from "../dispatch/dispatcher.ts";
import { updateDrone } from "../drones/drone-writes.ts";
import type { PresenceStore } from "../drones/presence.ts";
import type { Lifecycle } from "../lifecycle.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { Locks } from "../redis/locks.ts";
import type { StorageHealth } from "../storage/health.ts";
import type { AutoResumer } from "../turns/auto-resume.ts";
import type { DroneLoss } from "../turns/drone-loss.ts";
import type { TurnIngest } from "../turns/ingest.ts";
import type { TurnStore } from "../turns/store/turn-store.ts";
import type { TurnService } from "../turns/turn-service.ts";
import { publishDrone } from "./drone-updates.ts";
import { handle, refusal } from "./edge.ts";
import { type DronesNamespace, droneRoom, type IdeNamespace } from "./rooms.ts";

export interface DroneSocketDependencies {
  config: Pick<ResolvedConfig, "serverId" | "droneGraceMs">;
  logger: Logger;
  models: Models;
  locks: Locks;
  presence: PresenceStore;
  /** Owns the drones' slots (loaded on connect) and starts their user's queued turns. */
  dispatcher: Dispatcher;
  store: TurnStore;
  turns: TurnService;
  ingest: TurnIngest;
  /** What a drone's running turns say when its connection drops and comes back. */
  loss: DroneLoss;
  /** Gives a restarted drone back the turns it lost with its process. */
  autoResumer: AutoResumer;
  health: StorageHealth;
  metrics: Metrics;
  lifecycle: Lifecycle;
  /** The browsers' namespace, for `drone_update`. */
  ide: IdeNamespace;
}

export function attachDroneNamespace(
  drones: DronesNamespace,
  dependencies: DroneSocketDependencies,
): void {
  const { models, logger, presence, config, turns, ingest } = dependencies;

  drones.use((socket, next) => {
    // The version first: an older drone's handshake may not parse as this build's does.
    const claimed = (socket.handshake.auth ?? {}) as {
      protocolVersion?: unknown;
      version?: unknown;
    };
    if (
      typeof claimed.protocolVersion === "number" &&
      !isCompatibleProtocol(claimed.protocolVersion)
    ) {
      const version =
        typeof claimed.version === "string" ? claimed.version.slice(0, 50) : "unknown";
      next(
        refusal(
          "protocol_mismatch",
          `This server speaks protocol ${PROTOCOL_VERSION}; gadget-drone ${version} speaks protocol ${claimed.protocolVersion}. Install gadget-drone ${RELEASE_VERSION} from this server (gadget-drone update, or its /install.sh), or a server of its release`,
        ),
      );
      return;
    }
    const parsed = droneHandshakeSchema.safeParse(socket.handshake.auth);
    if (!parsed.success) {
      next(refusal("validation_failed", "Handshake needs {droneId, credential, protocolVersion}"));
      return;
    }
    const auth = parsed.data;
    if (!dependencies.lifecycle.accepting) {
      next(refusal("unavailable", "Server is shutting down; connect to another one"));
      return;
    }
    models.Drone.findById(auth.droneId)
      .lean<DroneDocument>()
      .then((drone) => {
        if (!drone || drone.credentialHash !== sha256(auth.credential)) {
          next(
            refusal("unauthorized", "Unknown drone or wrong credential: register the drone again"),
          );
          return;
        }
        if (drone.revokedAt) {
          next(refusal("forbidden", "This drone was revoked: register it again to use it"));
          return;
        }
        socket.data = {
          droneId: String(drone._id),
          userId: String(drone.user),
          droneName: drone.name,
        };
        next();
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, "drone handshake failed");
        next(refusal("internal", "Internal error"));
      });
  });

  drones.on("connection", (socket) => {
    const { droneId, userId } = socket.data;
    const auth = droneHandshakeSchema.parse(socket.handshake.auth);
    const log = logger.child({ droneId });
    const ready = (async () => {
      // Under the drone's lock, so racing connections and a revocation settle in one order.
      const joined = await dependencies.locks.with(`drone:${droneId}`, async () => {
        const drone = await models.Drone.findById(droneId).lean<DroneDocument>();
        if (!drone || drone.revokedAt || !socket.connected) return false;
        const capacity = auth.capacity ?? drone.capacity;
        const details = {
          capacity,
          workspaces: auth.workspaces,
          hostname: auth.hostname ?? drone.hostname,
          platform: auth.platform ?? drone.platform,
          version: auth.version ?? drone.version,
          sandbox: auth.sandbox,
          systemLabels: auth.labels,
          ephemeral: auth.ephemeral,
        };
        const unchanged =
          details.capacity === drone.capacity &&
          details.hostname === drone.hostname &&
          details.platform === drone.platform &&
          details.version === drone.version &&
          JSON.stringify(details.sandbox) === JSON.stringify(drone.sandbox) &&
          JSON.stringify(details.workspaces) === JSON.stringify(drone.workspaces) &&
          JSON.stringify(details.systemLabels) === JSON.stringify(drone.systemLabels ?? []) &&
          details.ephemeral === (drone.ephemeral ?? false) &&
          Date.now() - (drone.lastSeenAt?.getTime() ?? 0) < 60_000;
        // Live presence is in Redis; the document changes only when the drone's details do.
        if (!unchanged) {
          await models.Drone.updateOne(
            { _id: drone._id },
            { $set: { ...details, lastSeenAt: new Date() } },
          );
        }
        const [online] = await Promise.all([
          presence.connect(droneId, {
            userId,
            name: drone.name,
            serverId: config.serverId,
            socketId: socket.id,
            capacity,
            hostname: details.hostname,
            platform: details.platform,
            version: details.version,
            workspaces: auth.workspaces,
            labels: mergeLabels(drone.labels ?? [], auth.labels),
            ephemeral: auth.ephemeral,
            draining: auth.draining,
          }),
          // Dispatch counts used slots in Redis; fill them from the document if Redis lost them.
          dependencies.dispatcher.slots.load(droneId, (drone.activeTurns ?? []).map(String)),
        ]);
        if (!online) return false; // revoked meanwhile
        socket.join(droneRoom(droneId));
        // One connection per drone: this one replaces any older one, on whichever server.
        await drones.in(droneRoom(droneId)).except(socket.id).disconnectSockets(true);
        return true;
      });
      if (!joined) {
        socket.disconnect(true);
        return;
      }
      const rebased = await reconcile(droneId, auth.activeTurns, auth.journaledTurns);
      // The drone holds its events until now, so none is numbered before its turns are back.
      socket.emit("reconciled", { rebased }, () => undefined);
      log.info({ socketId: socket.id }, "drone connected");
      await publishDrone(dependencies, droneId);
      await dependencies.dispatcher.kickUser(userId);
    })().catch((error: unknown) => log.error({ err: error }, "drone connect failed"));

    /**
     * After a reconnect: keep the turns the drone still runs; give back the ones it lost with its
     * process (held, or `journaled` and interrupted after the grace) or still runs after the grace,
     * or interrupt (cancel) them.
     */
    async function reconcile(id: string, running: string[], journaled: string[]) {
      const drone = await models.Drone.findById(id).select({ activeTurns: 1 }).lean();
      const heldIds = new Set((drone?.activeTurns ?? []).map(String));
      const keep = running.filter((turnId) => heldIds.has(turnId));
      const stop = await ingest.renewLeases(id, { activeTurns: keep }, { force: true });
      // Messages to its turns it may not have taken: sent again (it takes each once).
      await turns.messages.resend(
        id,
        keep.filter((turnId) => !stop.includes(turnId)),
      );
      const rebased = await dependencies.loss.back(
        { id, name: socket.data.droneName },
        keep.filter((turnId) => !stop.includes(turnId)),
      );
      for (const turnId of running) {
        if (heldIds.has(turnId) && !stop.includes(turnId)) continue;
        // Interrupted while the connection was down, its process alive: given back from its last
        // checkpoint as a restarted drone's is, the live run dropped first (decision 0046). The
        // turn itself says so (`returned` reads it); Drone.activeTurns may still name it, as its
        // mirror is updated only after the interruption is written.
        const back = await dependencies.autoResumer.returned(droneOf(id), turnId, () =>
          socket.emit("turn_superseded", { turnId }, () => undefined),
        );
        if (!back) socket.emit("turn_cancel", { turnId }, () => undefined);
      }
      for (const turnId of heldIds) {
        if (running.includes(turnId)) continue;
        // Dispatched a moment ago, or lost by a restarted drone: only the latter has started. That
        // one continues on it from its last checkpoint, unless its session says otherwise.
        const turn = await dependencies.store.read(turnId);
        if (!turn || !(await turns.hasStarted(turn))) continue;
        if (await dependencies.autoResumer.restarted({ id, name: socket.data.droneName }, turnId))
          continue;
        await turns.finishNow(
          turnId,
          "interrupted",
          "The drone reconnected without this turn; it was interrupted",
          (turn) => turns.hasStarted(turn),
        );
      }
      // Also one the mirror still names: the loop above left an interrupted turn as it was.
      for (const turnId of journaled) {
        if (running.includes(turnId)) continue;
        await dependencies.autoResumer.returned(droneOf(id), turnId);
      }
      return rebased;
    }

    function droneOf(id: string) {
      return { id, name: socket.data.droneName };
    }

    const edge = { health: dependencies.health };
    socket.on(
      "turn_events",
      handle(
        log,
        turnEventBatchSchema,
        "event batch",
        async (batch) => {
          await ready;
          return ingest.ingestBatch(droneId, batch);
        },
        { ...edge, onError: (code) => dependencies.metrics.batchesRefused.inc({ code }) },
      ),
    );
    socket.on(
      "turn_checkpoint",
      handle(
        log,
        turnCheckpointSchema,
        "checkpoint",
        async (checkpoint) => {
          await ready;
          await ingest.storeCheckpoint(droneId, checkpoint);
          return {};
        },
        edge,
      ),
    );
    socket.on(
      "heartbeat",
      handle(
        log,
        heartbeatSchema,
        "heartbeat",
        async (beat) => {
          await ready;
          const current = await presence.touch(
            droneId,
            socket.id,
            beat.workspaces,
            beat.activeTurns,
            beat.draining,
          );
          // Stopping (or not any more): the drones page and pickers show it at once.
          if (current === "changed") await publishDrone(dependencies, droneId);
          // Not the holder any more (presence expired or was lost with Redis): this socket takes
          // it again, unless the drone was revoked (the tombstone, or the document if Redis lost it).
          if (!current) {
            const drone = await models.Drone.findById(droneId)
              .select({ revokedAt: 1, labels: 1 })
              .lean();
            if (!drone || drone.revokedAt) {
              socket.disconnect(true);
              return { cancelledTurns: [] };
            }
            const online = await presence.connect(droneId, {
              userId,
              name: socket.data.droneName,
              serverId: config.serverId,
              socketId: socket.id,
              capacity: auth.capacity ?? 1,
              hostname: auth.hostname ?? null,
              platform: auth.platform ?? null,
              version: auth.version ?? null,
              workspaces: beat.workspaces ?? auth.workspaces,
              labels: mergeLabels(drone.labels ?? [], auth.labels),
              ephemeral: auth.ephemeral,
              draining: beat.draining ?? auth.draining,
            });
            if (!online) {
              socket.disconnect(true);
              return { cancelledTurns: [] };
            }
          }
          const cancelledTurns = await ingest.renewLeases(droneId, beat);
          return { cancelledTurns };
        },
        edge,
      ),
    );

    socket.on(
      "update_refused",
      handle(
        log,
        droneUpdateRefusalSchema,
        "update refusal",
        async (refused) => {
          await ready;
          log.warn(refused, "drone refused an update");
          await updateDrone(dependencies, { _id: droneId }, { $set: { updateRefused: refused } });
          await publishDrone(dependencies, droneId);
          return {};
        },
        edge,
      ),
    );

    socket.on("disconnect", (reason) => {
      const since = new Date();
      const work = (async () => {
        await ready;
        await presence.disconnect(droneId, userId, socket.id);
        const [state] = await presence.read([droneId]);
        if (state?.socketId) return; // Replaced by a newer connection.
        log.info({ reason }, "drone disconnected");
        // This server is stopping, not the drone: it reconnects to another one (or to this one
        // started again) and goes on; its lease covers the gap, so its turns are not marked lost.
        if (!dependencies.lifecycle.accepting) return;
        // Browsers see the drone offline first, then its turns waiting for it.
        await publishDrone(dependencies, droneId);
        // The grace period starts now: the drone may come back (here or elsewhere) and go on.
        const drone = await models.Drone.findById(droneId).select({ activeTurns: 1 }).lean();
        await dependencies.loss.lost(
          { id: droneId, name: socket.data.droneName },
          (drone?.activeTurns ?? []).map(String),
          since,
        );
      })().catch((error: unknown) => log.error({ err: error }, "drone disconnect handling failed"));
      dependencies.lifecycle.track(work);
    });
  });
}

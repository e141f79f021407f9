// Prometheus metrics of one server process, in its own registry (tests run several servers in one process).
import { activeTurnStatuses, type Models } from "@gadget/db";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * Creates the registry. `connectedDrones` reads this process's /drones namespace; turn counts are
 * read from the database at scrape time, so every server reports the fleet-wide numbers.
 */
export function createMetrics(options: {
  models: Models;
  connectedDrones: () => number;
  liveSubscriptions: () => number;
  /** Queued turns waiting for drone labels, and the matching drones online (label-waits.ts). */
  labelWaits: () => Promise<Array<{ requires: string; queued: number; matchingOnline: number }>>;
}) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "gadget_process_" });
  const { models } = options;
  new Gauge({
    name: "gadget_connected_drones",
    help: "Drones connected to this server process",
    registers: [registry],
    collect() {
      this.set(options.connectedDrones());
    },
  });
  new Gauge({
    name: "gadget_live_subscriptions",
    help: "Browser sockets and SSE streams following a turn or session on this server process",
    registers: [registry],
    collect() {
      this.set(options.liveSubscriptions());
    },
  });
  new Gauge({
    name: "gadget_turns",
    help: "Turns by state across the fleet (queued: waiting for a drone; running: held by a drone)",
    labelNames: ["state"],
    registers: [registry],
    async collect() {
      const [queued, running] = await Promise.all([
        models.ChatTurn.countDocuments({ status: "queued" }),
        models.ChatTurn.countDocuments({ status: { $in: activeTurnStatuses } }),
      ]);
      this.set({ state: "queued" }, queued);
      this.set({ state: "running" }, running);
    },
  });
  const waits = () => options.labelWaits();
  let latest: Promise<Awaited<ReturnType<typeof waits>>> | null = null;
  // Both gauges read one computation per scrape.
  const sharedWaits = () => {
    latest ??= waits().finally(() => setTimeout(() => (latest = null), 1_000).unref());
    return latest;
  };
  new Gauge({
    name: "gadget_turns_waiting_for_labels",
    help: "Queued turns that no online drone can take, by the labels they require",
    labelNames: ["requires"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const wait of await sharedWaits()) this.set({ requires: wait.requires }, wait.queued);
    },
  });
  new Gauge({
    name: "gadget_drones_matching_waiting_turns",
    help: "Online drones (of the waiting turns' users) having the labels queued turns require",
    labelNames: ["requires"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const wait of await sharedWaits())
        this.set({ requires: wait.requires }, wait.matchingOnline);
    },
  });
  return {
    registry,
    dispatchLatency: new Histogram({
      name: "gadget_dispatch_latency_seconds",
      help: "From a turn being queued to a drone accepting its work order",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    eventsIngested: new Counter({
      name: "gadget_events_ingested_total",
      help: "Turn events stored from drones (duplicates not counted)",
      registers: [registry],
    }),
    turnsFinished: new Counter({
      name: "gadget_turns_finished_total",
      help: "Turns that reached a final status on this process",
      labelNames: ["status"],
      registers: [registry],
    }),
    batchesRefused: new Counter({
      name: "gadget_event_batches_refused_total",
      help: "Drone event batches answered with an error, by code (unavailable: the drone retries)",
      labelNames: ["code"],
      registers: [registry],
    }),
    storageFailures: new Counter({
      name: "gadget_storage_failures_total",
      help: "Calls to the database or Redis that failed because it was unavailable (each retry counts)",
      labelNames: ["service"],
      registers: [registry],
    }),
  };
}

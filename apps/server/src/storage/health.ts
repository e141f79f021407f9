// Outages of the services underneath (the database, Redis) as this server meets them: which
// errors are an outage (retry later) rather than a wrong request, one log line when an outage
// starts and one when it ends, the turns waiting on it, and the metrics of both.
import { isDatabaseError, isDatabaseUnavailable } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import { GadgetError, SystemError } from "@gadget/protocol";

export type StorageService = "database" | "redis";

/** What a turn waits on while its events cannot be stored or applied. */
export interface TurnWaiting {
  reason: StorageService;
  on: StorageService;
  since: Date;
}

/**
 * ioredis' own words for a connection that is gone or a command that gave up waiting, and a
 * Redis Cluster's or Sentinel's for a failover under way.
 */
const redisUnavailable =
  /Connection is closed|Stream isn't writeable|Command timed out|MaxRetriesPerRequest|Reached the max retries|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|LOADING|READONLY|MISCONF|the lock service is unavailable|CLUSTERDOWN|TRYAGAIN|Too many Cluster redirections|Failed to refresh slots cache|All sentinels are unreachable/;

/** The service an error says is unavailable, or null if it is not an outage. */
export function unavailableService(error: unknown): StorageService | null {
  if (error instanceof GadgetError) return null;
  if (isDatabaseUnavailable(error)) return "database";
  // The database's errors say "ECONNREFUSED" too: Redis's words below are not theirs to match.
  if (isDatabaseError(error)) return null;
  const message = error instanceof Error ? `${error.name} ${error.message}` : String(error);
  if (redisUnavailable.test(message)) return "redis";
  return null;
}

/** The answer a client gets while `service` is down: retryable, and saying what is happening. */
export function unavailableError(service: StorageService, cause?: unknown): SystemError {
  return new SystemError(
    "unavailable",
    service === "database"
      ? "Reconnecting to the database; try again in a moment"
      : "Reconnecting to Redis; try again in a moment",
    { details: { service, retryable: true }, ...(cause === undefined ? {} : { cause }) },
  );
}

interface Outage {
  since: Date;
  errors: number;
  sample: string;
}

export interface StorageHealthOptions {
  logger: Logger;
  /** Counts failures per service (the metrics' counter); optional. */
  onFailure?: (service: StorageService) => void;
  /** A turn started (`waiting`) or stopped (null) waiting on `service`: tell its user's browsers. */
  onWaiting?: (
    turn: { turnId: string; userId: string },
    waiting: TurnWaiting | null,
    service: StorageService,
  ) => void;
}

/**
 * Tracks outages of the database and Redis on this server. `failed` returns the service when the
 * error is an outage (and starts it), null otherwise; `succeeded` ends it.
 * @example const down = health.failed(error, turnId); if (down) throw unavailableError(down, error);
 */
export class StorageHealth {
  private readonly outages = new Map<StorageService, Outage>();
  private readonly waiting = new Map<string, TurnWaiting & { userId: string | null }>();

  constructor(private readonly options: StorageHealthOptions) {}

  /**
   * Records a failure. Returns the service that is down, or null when the error is not an outage
   * (then nothing is recorded: it is the request's own problem). A turn named here waits on it.
   */
  failed(error: unknown, turnId?: string, userId?: string): StorageService | null {
    const service = unavailableService(error);
    if (!service) return null;
    this.options.onFailure?.(service);
    let outage = this.outages.get(service);
    if (!outage) {
      outage = {
        since: new Date(),
        errors: 0,
        sample: error instanceof Error ? error.message : String(error),
      };
      this.outages.set(service, outage);
      this.options.logger.warn({ service, err: outage.sample }, `${service} unavailable; retrying`);
    }
    outage.errors++;
    if (turnId) this.wait(turnId, userId, service, outage.since);
    return service;
  }

  /**
   * `error` is this server's own `unavailable` answer (an outage already recorded where it was
   * met, maybe without naming the turn): `turnId` waits on it. Returns the service, or null.
   */
  relayed(error: unknown, turnId: string, userId?: string): StorageService | null {
    if (!(error instanceof GadgetError) || error.code !== "unavailable") return null;
    const service = (error.details as { service?: unknown } | undefined)?.service;
    if (service !== "database" && service !== "redis") return null;
    this.waits(turnId, userId, service);
    return service;
  }

  /** `turnId` waits on the outage of `service` going on now (none: nothing to wait on). */
  waits(turnId: string, userId: string | undefined, service: StorageService): void {
    const outage = this.outages.get(service);
    if (outage) this.wait(turnId, userId, service, outage.since);
  }

  private wait(turnId: string, userId: string | undefined, service: StorageService, since: Date) {
    const known = this.waiting.get(turnId);
    if (known && (known.userId || !userId)) return;
    // Told once the turn's user is known: the first failure may come from a path that is not.
    const waiting = known
      ? { reason: known.reason, on: known.on, since: known.since }
      : { reason: service, on: service, since };
    this.waiting.set(turnId, { ...waiting, userId: userId ?? null });
    if (userId) this.options.onWaiting?.({ turnId, userId }, waiting, waiting.on);
  }

  /** A call to `service` succeeded: an outage of it is over, and its turns wait no more. */
  succeeded(service: StorageService): void {
    const outage = this.outages.get(service);
    if (!outage) return;
    this.outages.delete(service);
    for (const [turnId, waiting] of this.waiting) {
      if (waiting.on !== service) continue;
      this.waiting.delete(turnId);
      if (waiting.userId) {
        this.options.onWaiting?.({ turnId, userId: waiting.userId }, null, service);
      }
    }
    this.options.logger.info(
      {
        service,
        seconds: Math.round((Date.now() - outage.since.getTime()) / 100) / 10,
        failures: outage.errors,
      },
      `${service} is back`,
    );
  }

  /** What `turnId` waits on, if its events are held up by an outage seen here. */
  waitingOf(turnId: string): TurnWaiting | null {
    const waiting = this.waiting.get(turnId);
    return waiting ? { reason: waiting.reason, on: waiting.on, since: waiting.since } : null;
  }

  /** The outages going on now. */
  current(): Array<{ service: StorageService; since: Date }> {
    return [...this.outages].map(([service, outage]) => ({ service, since: outage.since }));
  }
}

/**
 * Runs `work` (idempotent) until it succeeds, retrying outages with backoff for up to `forMs`;
 * then throws `unavailable`. Other errors are thrown at once. `onOutage` hears each outage met.
 * @example await retryWhileUnavailable(health, "database", () => insert(), { forMs: 5_000 });
 */
export async function retryWhileUnavailable<T>(
  health: StorageHealth,
  service: StorageService,
  work: () => Promise<T>,
  options: { forMs: number; turnId?: string; onOutage?: (service: StorageService) => void },
): Promise<T> {
  const deadline = Date.now() + options.forMs;
  let delay = 100;
  for (;;) {
    try {
      const value = await work();
      health.succeeded(service);
      return value;
    } catch (error) {
      const down = health.failed(error, options.turnId);
      if (!down) throw error;
      options.onOutage?.(down);
      if (Date.now() + delay > deadline) throw unavailableError(down, error);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 1_000);
    }
  }
}

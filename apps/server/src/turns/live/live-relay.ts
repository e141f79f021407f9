// Live turn events between server processes and to subscribers, without gap or duplicate.
// Every stored batch goes to this process's subscriptions at once and, on one Redis channel, to
// the other processes' (a process ignores its own messages). A subscription keeps a cursor (last
// seq sent) per turn: it catches up from the database first while live batches queue behind,
// sends only seq > cursor, and fetches from the database whatever a live batch skipped.
import { randomUUID } from "node:crypto";
import type { Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type { TurnActivity, TurnEvent, TurnEventsMessage } from "@gadget/protocol";
import type { Cluster, Redis } from "ioredis";
import { Types } from "mongoose";
import { toEvent } from "../../serialize.ts";
import { activityOf } from "./turn-activity.ts";

/** What one stored batch looks like on the channel. */
export interface LiveBatch {
  turnId: string;
  sessionId: string;
  userId: string;
  events: TurnEvent[];
}

export interface SubscribeOptions {
  turnId?: string;
  sessionId: string;
  /** Per turn: send only events with a larger seq. */
  after: number;
  /** Receives every event once, in seq order per turn (a batch or a page at a time). */
  sink: (message: TurnEventsMessage) => void;
}

const pageSize = 500;
/** How long a live event waits for missing earlier ones to be stored: 40 × 50 ms. */
const gapRetries = 40;
const gapRetryMs = 50;

/** What goes over the channel: the batches one process stored in one tick. */
interface LiveMessage {
  origin: string;
  batches: LiveBatch[];
}

/** One subscriber's view of a turn or a session. */
export class LiveSubscription {
  private readonly cursors = new Map<string, number>();
  private chain: Promise<void>;
  private closed = false;
  /** Resolves once everything stored at subscribe time has been sent. */
  readonly ready: Promise<void>;

  constructor(
    private readonly relay: LiveRelay,
    readonly options: SubscribeOptions,
  ) {
    this.chain = Promise.resolve().then(() => this.catchUp());
    this.ready = this.chain;
    this.chain = this.chain.catch((error: unknown) =>
      this.relay.logError(error, "catch-up failed"),
    );
  }

  get isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.relay.remove(this);
  }

  /** Queues a live batch behind whatever is being sent. */
  push(batch: LiveBatch): void {
    this.chain = this.chain
      .then(() => this.deliverLive(batch))
      .catch((error: unknown) => this.relay.logError(error, "live delivery failed"));
  }

  private cursor(turnId: string): number {
    return this.cursors.get(turnId) ?? this.options.after;
  }

  /** Sends events in seq order, all after the cursor. */
  private send(turnId: string, events: TurnEvent[]): void {
    if (this.closed || events.length === 0) return;
    this.cursors.set(turnId, events[events.length - 1]!.seq);
    this.options.sink({ turnId, sessionId: this.options.sessionId, events });
  }

  private async catchUp(): Promise<void> {
    const turnIds = this.options.turnId
      ? [this.options.turnId]
      : await this.relay.sessionTurnIds(this.options.sessionId);
    for (const turnId of turnIds) await this.fill(turnId, Number.POSITIVE_INFINITY);
  }

  /** Sends stored events of `turnId` after the cursor and before `beforeSeq`. */
  private async fill(turnId: string, beforeSeq: number): Promise<void> {
    while (!this.closed) {
      const from = this.cursor(turnId);
      if (from + 1 >= beforeSeq) return;
      const events = await this.relay.storedEvents(turnId, from, beforeSeq, pageSize);
      this.send(turnId, events);
      if (events.length < pageSize) return;
    }
  }

  private async deliverLive(batch: LiveBatch): Promise<void> {
    const { turnId } = batch;
    /** Events to send together, and the cursor as if they were sent. */
    let ready: TurnEvent[] = [];
    let cursor = this.cursor(turnId);
    for (const event of batch.events) {
      if (this.closed) return;
      if (event.seq <= cursor) continue;
      if (event.seq > cursor + 1) {
        this.send(turnId, ready);
        ready = [];
        await this.fill(turnId, event.seq);
        // Another process may still be writing the missing ones: wait for them a little.
        for (
          let attempt = 0;
          attempt < gapRetries && this.cursor(turnId) + 1 < event.seq;
          attempt++
        ) {
          await new Promise((resolve) => setTimeout(resolve, gapRetryMs));
          await this.fill(turnId, event.seq);
        }
        cursor = this.cursor(turnId);
        if (event.seq <= cursor) continue;
      }
      ready.push(event);
      cursor = event.seq;
    }
    this.send(turnId, ready);
  }
}

/**
 * A user's activity subscription: what each of their turns is doing, folded from the batches this
 * process relays (every process sees every batch on the channel, so nothing more crosses Redis).
 * The notices of one tick go out as one message.
 */
export class ActivityWatch {
  private pending: TurnActivity[] = [];
  private scheduled = false;
  private closed = false;

  constructor(
    private readonly relay: LiveRelay,
    readonly userId: string,
    private readonly sink: (activity: TurnActivity[]) => void,
  ) {}

  push(notice: TurnActivity): void {
    if (this.closed) return;
    this.pending.push(notice);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const activity = this.pending;
      this.pending = [];
      if (!this.closed && activity.length > 0) this.sink(activity);
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = [];
    this.relay.removeActivity(this);
  }
}

/** Publishes stored batches and feeds them to this process's subscriptions. */
export class LiveRelay {
  private readonly byTurn = new Map<string, Set<LiveSubscription>>();
  private readonly bySession = new Map<string, Set<LiveSubscription>>();
  private readonly byUser = new Map<string, Set<ActivityWatch>>();
  /** Batches published in this tick, sent as one message. */
  private outgoing: LiveBatch[] = [];
  private sending: Promise<void> | null = null;
  /** Marks this process's messages, which it delivered itself already. */
  private readonly origin = randomUUID();

  constructor(
    private readonly publisher: Redis | Cluster,
    private readonly subscriber: Redis | Cluster,
    private readonly channel: string,
    private readonly models: Models,
    private readonly logger: Logger,
    /**
     * On a Redis Cluster: SPUBLISH/SSUBSCRIBE, so each message goes to the channel's shard only
     * rather than over the cluster bus to every node (decision 0054).
     */
    private readonly sharded = false,
  ) {}

  async start(): Promise<void> {
    this.subscriber.on(
      this.sharded ? "smessage" : "message",
      (channel: string, message: string) => {
        if (channel !== this.channel) return;
        try {
          const parsed = JSON.parse(message) as LiveMessage;
          if (parsed.origin === this.origin) return;
          for (const batch of parsed.batches) {
            for (const event of batch.events) event.at = new Date(event.at);
            this.deliver(batch);
          }
        } catch (error) {
          this.logError(error, "bad live batch");
        }
      },
    );
    if (this.sharded) await this.subscriber.ssubscribe(this.channel);
    else await this.subscriber.subscribe(this.channel);
  }

  /**
   * Publishes a batch that is already stored: to this process's subscriptions at once, to the
   * other processes on the channel. Batches published in the same tick (every turn's batches
   * stored by one group write) go out as one message, in the order they were published.
   */
  publish(batch: LiveBatch): Promise<void> {
    if (batch.events.length === 0) return Promise.resolve();
    this.deliver(batch);
    this.outgoing.push(batch);
    this.sending ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      const message: LiveMessage = { origin: this.origin, batches: this.outgoing };
      this.outgoing = [];
      this.sending = null;
      const text = JSON.stringify(message);
      const sent = this.sharded
        ? this.publisher.spublish(this.channel, text)
        : this.publisher.publish(this.channel, text);
      return sent.then(() => undefined);
    });
    return this.sending;
  }

  /**
   * Subscribes to one turn (turnId) or every turn of a session.
   * @example const sub = relay.subscribe({ turnId, sessionId, after: 0, sink }); await sub.ready;
   */
  subscribe(options: SubscribeOptions): LiveSubscription {
    const subscription = new LiveSubscription(this, options);
    const map = options.turnId ? this.byTurn : this.bySession;
    const key = options.turnId ?? options.sessionId;
    let set = map.get(key);
    if (!set) {
      set = new Set();
      map.set(key, set);
    }
    set.add(subscription);
    return subscription;
  }

  /**
   * Follows what every turn of `userId` is doing: `sink` gets a notice per turn whose stored
   * events changed its pass, tool or approvals, from now on (no catch-up: the list is read over
   * REST).
   */
  watchActivity(userId: string, sink: (activity: TurnActivity[]) => void): ActivityWatch {
    const watch = new ActivityWatch(this, userId, sink);
    let set = this.byUser.get(userId);
    if (!set) {
      set = new Set();
      this.byUser.set(userId, set);
    }
    set.add(watch);
    return watch;
  }

  removeActivity(watch: ActivityWatch): void {
    const set = this.byUser.get(watch.userId);
    set?.delete(watch);
    if (set?.size === 0) this.byUser.delete(watch.userId);
  }

  /** How many subscriptions this process holds. */
  get size(): number {
    let count = 0;
    for (const set of this.byUser.values()) count += set.size;
    for (const set of this.byTurn.values()) count += set.size;
    for (const set of this.bySession.values()) count += set.size;
    return count;
  }

  remove(subscription: LiveSubscription): void {
    const { turnId, sessionId } = subscription.options;
    const map = turnId ? this.byTurn : this.bySession;
    const key = turnId ?? sessionId;
    const set = map.get(key);
    set?.delete(subscription);
    if (set?.size === 0) map.delete(key);
  }

  private deliver(batch: LiveBatch): void {
    for (const subscription of this.byTurn.get(batch.turnId) ?? []) subscription.push(batch);
    for (const subscription of this.bySession.get(batch.sessionId) ?? []) subscription.push(batch);
    // Per batch with nobody watching its user: one map lookup. Otherwise one look at each event.
    const watches = this.byUser.get(batch.userId);
    if (!watches) return;
    const change = activityOf(batch.events);
    if (!change) return;
    const notice: TurnActivity = { turnId: batch.turnId, sessionId: batch.sessionId, ...change };
    for (const watch of watches) watch.push(notice);
  }

  async sessionTurnIds(sessionId: string): Promise<string[]> {
    const turns = await this.models.ChatTurn.find({ session: new Types.ObjectId(sessionId) })
      .sort({ createdAt: 1 })
      .select({ _id: 1 })
      .lean();
    return turns.map((turn) => String(turn._id));
  }

  /**
   * Up to `limit` stored events of a turn with afterSeq < seq < beforeSeq, in seq order.
   * A turn's seqs are consecutive, so the page is first read as the seq range it would cover:
   * bounded on both sides, FerretDB reads just that range of the index (it searches seqs by their
   * text only then), where `$gt` alone made it decode every later event of the turn, a page of a
   * 20,000-event turn in 0.4–0.8 s. Only a short range (the turn's end, or a gap) reads on past it.
   */
  async storedEvents(
    turnId: string,
    afterSeq: number,
    beforeSeq: number,
    limit: number,
  ): Promise<TurnEvent[]> {
    const turn = new Types.ObjectId(turnId);
    const end = Math.min(afterSeq + limit, beforeSeq - 1);
    const read = (seq: Record<string, number>, count: number) =>
      this.models.TurnEvent.find({ turn, seq }).sort({ seq: 1 }).limit(count).lean();
    const events = await read({ $gt: afterSeq, $lte: end }, limit);
    if (events.length < limit && end < beforeSeq - 1) {
      const seq: Record<string, number> = { $gt: end };
      if (Number.isFinite(beforeSeq)) seq.$lt = beforeSeq;
      events.push(...(await read(seq, limit - events.length)));
    }
    return events.map(toEvent);
  }

  logError(error: unknown, message: string): void {
    this.logger.error({ err: error }, message);
  }
}

// Webhooks: when a turn of a user reaches a state one of their webhooks asked for, a signed JSON
// POST goes to its URL through the outbound policy, retried with backoff until it answers 2xx.
// Exactly once across server processes: the delivery's id (and its BullMQ job id) is derived from
// the webhook, the turn, the event and the turn's event seq at that change, so whoever records or
// sees the change again names the same delivery; a second insert finds it, a second `add` finds
// the job. Bodies are stored as first built: every attempt sends the same bytes and signature.
// A receiver's 4xx answer (but 408 and 429) is final: the request itself is refused, so the job
// fails at once (BullMQ's UnrecoverableError) instead of being retried.
import { createHash, createHmac, randomBytes } from "node:crypto";
import type { ChatTurnDocument, Models, WebhookDeliveryDocument } from "@gadget/db";
import { isDuplicateKeyError } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import {
  type CreateWebhookBody,
  SystemError,
  type TurnStatus,
  UserError,
  type WebhookEvent,
  type WebhookPayload,
  webhookPingEvent,
} from "@gadget/protocol";
import { type Job, type Queue, UnrecoverableError } from "bullmq";
import { Types } from "mongoose";
import type { ResolvedConfig } from "../config.ts";
import type { SecretBox } from "../crypto/secret-box.ts";
import type { Lifecycle } from "../lifecycle.ts";
import type { OutboundPolicy } from "../outbound/outbound-policy.ts";
import { createWithinQuota, type QuotaDependencies } from "../quotas.ts";

/** The turn statuses a webhook hears of, by event. */
const eventOfStatus: Partial<Record<TurnStatus, WebhookEvent>> = {
  completed: "turn.completed",
  failed: "turn.failed",
  cancelled: "turn.cancelled",
  interrupted: "turn.interrupted",
  awaiting_approval: "turn.awaiting_approval",
};

/** A receiver's answer is read up to this much (and thrown away). */
const maxAnswerBytes = 64 * 1024;
/** Finished jobs stay this long: a job id seen again within it is not queued again. */
const keepJobsSeconds = 7 * 24 * 60 * 60;
/** Deliveries older than this are removed when the webhook gets a new one (hourly at most). */
const keepDeliveriesMs = 30 * 24 * 60 * 60 * 1000;
const pruneEveryMs = 60 * 60 * 1000;

/** A delivery job's data. */
export interface DeliveryJob {
  deliveryId: string;
  /** Read beside the delivery, in the same round. */
  webhookId: string;
}

export interface WebhookDependencies extends QuotaDependencies {
  config: Pick<ResolvedConfig, "webhookAttempts" | "webhookRetryDelayMs" | "quotas">;
  logger: Logger;
  models: Models;
  secretBox: SecretBox;
  outbound: OutboundPolicy;
  lifecycle: Lifecycle;
  /** The `webhooks` queue (its jobs are processed by `process`). */
  queue: Queue<DeliveryJob>;
  /** The web IDE's address (known once the server listens). */
  publicUrl: () => string;
}

/**
 * The hex HMAC-SHA256 of `body` under `secret`, as in `X-Gadget-Signature: sha256=<hex>`.
 * @example const header = `sha256=${webhookSignature(secret, rawBody)}`;
 */
export function webhookSignature(secret: string, body: string): string {
  return createHmac("sha256", secret).update(body, "utf8").digest("hex");
}

/** Whether a receiver's HTTP status refuses the request itself (retrying cannot help). */
export function isFinalRefusal(statusCode: number): boolean {
  return statusCode >= 400 && statusCode <= 499 && statusCode !== 408 && statusCode !== 429;
}

export class Webhooks {
  /** When this process last removed old deliveries of each webhook. */
  private readonly pruned = new Map<string, number>();

  constructor(private readonly dependencies: WebhookDependencies) {}

  /**
   * Creates a webhook of `userId` and answers its secret, the only time it is shown.
   * @example const { webhook, secret } = await webhooks.create(userId, { url, events: ["turn.failed"] });
   */
  async create(userId: string, body: CreateWebhookBody) {
    const refusal = await this.dependencies.outbound.savedRefusal(new URL(body.url));
    if (refusal) {
      throw new UserError("validation_failed", `This webhook URL cannot be called: ${refusal}`, {
        details: [{ path: "url", message: refusal }],
      });
    }
    const secret = `whsec_${randomBytes(32).toString("base64url")}`;
    const { models, secretBox } = this.dependencies;
    const user = new Types.ObjectId(userId);
    const webhook = await createWithinQuota(
      this.dependencies,
      "webhooks",
      userId,
      () => models.Webhook.countDocuments({ user }),
      () =>
        models.Webhook.create({
          user,
          url: body.url,
          events: body.events,
          secretEncrypted: secretBox.seal(secret),
        }),
    );
    return { webhook: webhook.toObject(), secret };
  }

  /** Removes a webhook and its deliveries (queued attempts find it gone and stop). */
  async remove(webhookId: Types.ObjectId): Promise<void> {
    await this.dependencies.models.Webhook.deleteOne({ _id: webhookId });
    await this.dependencies.models.WebhookDelivery.deleteMany({ webhook: webhookId });
  }

  /** Queues a `ping` to a webhook: proof its URL answers and its secret verifies. */
  async ping(webhook: { _id: Types.ObjectId; user: Types.ObjectId }) {
    const payload: WebhookPayload = {
      event: webhookPingEvent,
      turn: null,
      session: null,
      project: null,
      link: this.dependencies.publicUrl() || null,
    };
    return this.enqueue({
      _id: `whd_${randomBytes(16).toString("hex")}`,
      webhook: webhook._id,
      user: webhook.user,
      event: webhookPingEvent,
      turn: null,
      body: JSON.stringify(payload),
    });
  }

  /**
   * Hears every stored change of a turn; one that reached a state webhooks listen for queues one
   * delivery per webhook of the turn's user that asked for it. Never throws (the turn's write
   * must not fail for a webhook) and never delays it: the work runs beside it.
   */
  turnChanged(turn: ChatTurnDocument, statusChanged: boolean): void {
    if (!statusChanged) return;
    const event = eventOfStatus[turn.status];
    if (!event) return;
    const work = this.deliver(turn, event).catch((error: unknown) =>
      this.dependencies.logger.error(
        { err: error, turnId: String(turn._id), event },
        "could not queue webhook deliveries",
      ),
    );
    this.dependencies.lifecycle.track(work);
  }

  private async deliver(turn: ChatTurnDocument, event: WebhookEvent): Promise<void> {
    const { models } = this.dependencies;
    const hooks = (await models.Webhook.find({ user: turn.user }).lean()).filter((hook) =>
      hook.events.includes(event),
    );
    if (hooks.length === 0) return;
    const [session, project] = await Promise.all([
      models.ChatSession.findById(turn.session, { name: 1 }).lean(),
      models.Project.findById(turn.project, { name: 1 }).lean(),
    ]);
    const base = this.dependencies.publicUrl();
    const payload: WebhookPayload = {
      event,
      turn: {
        _id: String(turn._id),
        status: turn.status,
        prompt: (turn.prompt.split("\n", 1)[0] ?? "").slice(0, 200),
        error: turn.error ?? null,
        // Summed floats (0.004410000000000001): a millionth of a dollar is precise enough.
        cost: Math.round((turn.stats?.cost ?? 0) * 1e6) / 1e6,
        createdAt: turn.createdAt,
        startedAt: turn.startedAt ?? null,
        finishedAt: turn.finishedAt ?? null,
      },
      session: session ? { _id: String(session._id), name: session.name } : null,
      project: project ? { _id: String(project._id), name: project.name } : null,
      link: base
        ? `${base}/projects/${String(turn.project)}/sessions/${String(turn.session)}`
        : null,
    };
    const body = JSON.stringify(payload);
    await Promise.all(
      hooks.map((hook) => {
        // The change's identity: the turn's event seq grows with every change, so a second
        // approval wait or a resumed turn's second end is a new delivery, a repeat is not.
        const occurrence = `${String(hook._id)}|${String(turn._id)}|${event}|${turn.lastSeq ?? 0}`;
        return this.enqueue({
          _id: `whd_${createHash("sha256").update(occurrence).digest("hex").slice(0, 32)}`,
          webhook: hook._id,
          user: turn.user,
          event,
          turn: turn._id,
          body,
        });
      }),
    );
  }

  /** Records a delivery (once) and queues its job (once: the job id is the delivery's). */
  private async enqueue(
    delivery: Pick<WebhookDeliveryDocument, "_id" | "webhook" | "user" | "event" | "turn" | "body">,
  ): Promise<WebhookDeliveryDocument> {
    const { models } = this.dependencies;
    let stored: WebhookDeliveryDocument;
    try {
      stored = (await models.WebhookDelivery.create(delivery)).toObject();
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
      // Already recorded by whoever saw this change first; the job's add below is a no-op too.
      stored = (await models.WebhookDelivery.findById(
        delivery._id,
      ).lean()) as WebhookDeliveryDocument;
    }
    await this.dependencies.queue.addBulk([this.job(delivery._id, String(delivery.webhook))]);
    await this.prune(String(delivery.webhook));
    return stored;
  }

  /**
   * Queues every delivery still pending again: Redis may have come back without its jobs, or an
   * upgrade left them under an old queue name. A job still queued is left as it is (the job id is
   * the delivery's), so any server may call this at any time; answers how many were pending.
   */
  async requeuePending(): Promise<number> {
    const pending = await this.dependencies.models.WebhookDelivery.find(
      { status: "pending", createdAt: { $gte: new Date(Date.now() - keepDeliveriesMs) } },
      { _id: 1, webhook: 1 },
    ).lean();
    for (let start = 0; start < pending.length; start += 500) {
      const chunk = pending.slice(start, start + 500);
      await this.dependencies.queue.addBulk(
        chunk.map((delivery) => this.job(delivery._id, String(delivery.webhook))),
      );
    }
    return pending.length;
  }

  /** The job of one delivery: its id is the delivery's, so it is queued at most once. */
  private job(deliveryId: string, webhookId: string) {
    const { config } = this.dependencies;
    return {
      name: "deliver",
      data: { deliveryId, webhookId },
      opts: {
        jobId: deliveryId,
        attempts: config.webhookAttempts,
        backoff: { type: "exponential", delay: config.webhookRetryDelayMs },
        removeOnComplete: { age: keepJobsSeconds },
        removeOnFail: { age: keepJobsSeconds },
      },
    };
  }

  /** Removes a webhook's deliveries past their keeping time, at most hourly per process. */
  private async prune(webhookId: string): Promise<void> {
    const last = this.pruned.get(webhookId) ?? 0;
    if (Date.now() - last < pruneEveryMs) return;
    this.pruned.set(webhookId, Date.now());
    await this.dependencies.models.WebhookDelivery.deleteMany({
      webhook: new Types.ObjectId(webhookId),
      createdAt: { $lt: new Date(Date.now() - keepDeliveriesMs) },
    });
  }

  /**
   * One attempt (the queue's processor): POST the stored body. A 2xx delivers it; a final refusal
   * (4xx but 408/429) fails it for good; anything else throws for a retry.
   */
  async process(job: Job<DeliveryJob>): Promise<void> {
    const { models, secretBox, outbound, config } = this.dependencies;
    const [delivery, webhook] = await Promise.all([
      models.WebhookDelivery.findById(job.data.deliveryId).lean(),
      models.Webhook.findById(job.data.webhookId).lean(),
    ]);
    if (delivery?.status !== "pending" || !webhook) return;
    const secret = secretBox.open(webhook.secretEncrypted);
    let statusCode: number | null = null;
    let problem: string | null = null;
    let final = false;
    try {
      const answer = await outbound.fetcher(maxAnswerBytes)(webhook.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "GadgetCode-Webhook",
          "x-gadget-event": delivery.event,
          "x-gadget-delivery": delivery._id,
          "x-gadget-signature": `sha256=${webhookSignature(secret, delivery.body)}`,
        },
        body: delivery.body,
      });
      statusCode = answer.status;
      // Read (and drop) the answer so the connection ends; a huge one is cut off.
      await answer.arrayBuffer().catch(() => undefined);
      if (statusCode < 200 || statusCode > 299) {
        problem = `the receiver answered HTTP ${statusCode}`;
        final = isFinalRefusal(statusCode);
      }
    } catch (error) {
      problem = error instanceof Error ? error.message : String(error);
    }
    const now = new Date();
    const last = final || job.attemptsMade + 1 >= (job.opts.attempts ?? config.webhookAttempts);
    await models.WebhookDelivery.updateOne(
      { _id: delivery._id },
      {
        $inc: { attempts: 1 },
        $set: {
          lastStatusCode: statusCode,
          lastError: problem,
          lastAttemptAt: now,
          ...(problem === null
            ? { status: "delivered", deliveredAt: now }
            : last
              ? { status: "failed" }
              : {}),
        },
      },
    );
    if (problem === null) return;
    // The error decides the job: failed for good, or retried with backoff.
    throw final ? new UnrecoverableError(problem) : new SystemError("unavailable", problem);
  }
}

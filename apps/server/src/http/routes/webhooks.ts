// A user's webhooks: created with a secret shown once, listed without it, removed, tested, and
// their recent deliveries listed with how each went.
import type { Models } from "@gadget/db";
import { createWebhookBodySchema, parseOrThrow, UserError } from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { Types } from "mongoose";
import { requireUser } from "../../auth/authenticate.ts";
import type { RateLimits } from "../../auth/rate-limit.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import { ownedBy } from "../../owned.ts";
import { toWebhook, toWebhookDelivery } from "../../serialize.ts";
import type { Webhooks } from "../../webhooks/webhooks.ts";
import { pageOf, pageRows } from "../pages.ts";
import { idParam } from "../params.ts";

/** Tests reach out to the network; a user gets this many a minute. */
const testsPerMinute = 30;
/** How many recent deliveries a webhook lists. */
const recentDeliveries = 50;

export interface WebhookRouteDependencies {
  models: Models;
  limits: RateLimits;
  signIns: SignIns;
  webhooks: Webhooks;
}

export function webhookRoutes(dependencies: WebhookRouteDependencies): FastifyPluginAsync {
  const { models, webhooks } = dependencies;
  const owned = async (params: unknown, userId: string) => {
    const id = idParam(params, "id", "Webhook");
    const webhook = ownedBy(await models.Webhook.findById(id).lean(), userId);
    if (!webhook) throw new UserError("not_found", "Webhook not found");
    return webhook;
  };
  return async (app) => {
    app.post("/webhooks", { bodyLimit: 16 * 1024 }, async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const body = parseOrThrow(createWebhookBodySchema, request.body, "webhook");
      const { webhook, secret } = await webhooks.create(userId, body);
      reply.status(201).send({ webhook: toWebhook(webhook), secret });
    });

    app.get("/webhooks", async (request) => {
      const userId = await requireUser(dependencies, request);
      const page = pageOf(request.query);
      const { rows, nextCursor } = pageRows(
        page,
        await models.Webhook.find({ user: new Types.ObjectId(userId), ...page.filter })
          .sort({ _id: 1 })
          .limit(page.fetch)
          .lean(),
      );
      return { webhooks: rows.map(toWebhook), nextCursor };
    });

    app.delete("/webhooks/:id", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const webhook = await owned(request.params, userId);
      await webhooks.remove(webhook._id);
      reply.status(204).send();
    });

    app.get("/webhooks/:id/deliveries", async (request) => {
      const userId = await requireUser(dependencies, request);
      const webhook = await owned(request.params, userId);
      const deliveries = await models.WebhookDelivery.find({ webhook: webhook._id })
        .sort({ createdAt: -1 })
        .limit(recentDeliveries)
        .lean();
      return { deliveries: deliveries.map(toWebhookDelivery) };
    });

    app.post("/webhooks/:id/test", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const webhook = await owned(request.params, userId);
      await dependencies.limits.count("webhook-test", [userId], testsPerMinute, 60_000);
      const delivery = await webhooks.ping(webhook);
      reply.status(202).send({ delivery: toWebhookDelivery(delivery) });
    });
  };
}

// A user's webhooks: created with a secret shown once, listed without it, removed, tested, and
// their recent deliveries listed with how each went.
import type { Models } from "@gadget/db";
import { rest, UserError } from "@gadget/protocol";
import { Types } from "mongoose";
import type { RateLimits } from "../../auth/rate-limit.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import { ownedBy } from "../../owned.ts";
import { toWebhook, toWebhookDelivery } from "../../serialize.ts";
import type { Webhooks } from "../../webhooks/webhooks.ts";
import { type ContractApp, serve } from "../contract.ts";
import { pageOf, pageRows } from "../pages.ts";
import { userOf } from "../scopes.ts";

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

export function webhookRoutes(app: ContractApp, dependencies: WebhookRouteDependencies): void {
  const { models, webhooks } = dependencies;
  const owned = async (userId: string, id: string) => {
    const webhook = ownedBy(await models.Webhook.findById(id).lean(), userId);
    if (!webhook) throw new UserError("not_found", "Webhook not found");
    return webhook;
  };

  serve(app, rest.webhooks.create, async (request, reply) => {
    const { webhook, secret } = await webhooks.create(userOf(request), request.body);
    return reply.status(201).send({ webhook: toWebhook(webhook), secret });
  });

  serve(app, rest.webhooks.list, async (request) => {
    const page = pageOf(request.query);
    const { rows, nextCursor } = pageRows(
      page,
      await models.Webhook.find({ user: new Types.ObjectId(userOf(request)), ...page.filter })
        .sort({ _id: 1 })
        .limit(page.fetch)
        .lean(),
    );
    return { webhooks: rows.map(toWebhook), nextCursor };
  });

  serve(app, rest.webhooks.remove, async (request, reply) => {
    const webhook = await owned(userOf(request), request.params.id);
    await webhooks.remove(webhook._id);
    return reply.status(204).send();
  });

  serve(app, rest.webhooks.deliveries, async (request) => {
    const webhook = await owned(userOf(request), request.params.id);
    const deliveries = await models.WebhookDelivery.find({ webhook: webhook._id })
      .sort({ createdAt: -1 })
      .limit(recentDeliveries)
      .lean();
    return { deliveries: deliveries.map(toWebhookDelivery) };
  });

  serve(app, rest.webhooks.test, async (request, reply) => {
    const userId = userOf(request);
    const webhook = await owned(userId, request.params.id);
    await dependencies.limits.count("webhook-test", [userId], testsPerMinute, 60_000);
    const delivery = await webhooks.ping(webhook);
    return reply.status(202).send({ delivery: toWebhookDelivery(delivery) });
  });
}

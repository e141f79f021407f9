// OpenAI-compatible providers. The apiKey goes in, is sealed with AES-256-GCM, and never comes out.
import {
  createProviderBodySchema,
  parseOrThrow,
  providerCheckBodySchema,
  UserError,
} from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { Types } from "mongoose";
import { requireUser } from "../../auth/authenticate.ts";
import { limit } from "../../auth/rate-limit.ts";
import type { ServerContext } from "../../context.ts";
import { ownedBy } from "../../owned.ts";
import { checkProvider } from "../../providers/check-provider.ts";
import { toProvider } from "../../serialize.ts";
import { idParam } from "../params.ts";

/** Checks reach out to the network; a user gets this many a minute. */
const checksPerMinute = 30;

export function providerRoutes(context: ServerContext): FastifyPluginAsync {
  const { models, secretBox, redis, config } = context;
  const limitChecks = (userId: string) =>
    limit(redis, `${config.redisPrefix}:rl:provider-check:${userId}`, checksPerMinute, 60_000);
  return async (app) => {
    app.post("/providers", async (request, reply) => {
      const userId = await requireUser(context, request);
      const body = parseOrThrow(createProviderBodySchema, request.body, "provider");
      const provider = await models.Provider.create({
        user: userId,
        name: body.name,
        baseUrl: body.baseUrl,
        apiKeyEncrypted: secretBox.seal(body.apiKey),
        hasApiKey: body.apiKey.length > 0,
        modelId: body.modelId,
        params: body.params ?? {},
        escalationModelId: body.escalationModelId ?? null,
        contextWindow: body.contextWindow ?? null,
        pricing: body.pricing ?? null,
      });
      reply.status(201).send({ provider: toProvider(provider.toObject()) });
    });

    app.get("/providers", async (request) => {
      const userId = await requireUser(context, request);
      const providers = await models.Provider.find({ user: new Types.ObjectId(userId) })
        .sort({ createdAt: 1 })
        .lean();
      return { providers: providers.map(toProvider) };
    });

    app.post("/providers/check", async (request) => {
      const userId = await requireUser(context, request);
      const body = parseOrThrow(providerCheckBodySchema, request.body, "provider check");
      await limitChecks(userId);
      return checkProvider(body);
    });

    app.post("/providers/:id/check", async (request) => {
      const userId = await requireUser(context, request);
      const id = idParam(request.params, "id", "Provider");
      const provider = ownedBy(await models.Provider.findById(id).lean(), userId);
      if (!provider) throw new UserError("not_found", "Provider not found");
      await limitChecks(userId);
      return checkProvider({
        baseUrl: provider.baseUrl,
        apiKey: provider.hasApiKey ? secretBox.open(provider.apiKeyEncrypted) : "",
        modelId: provider.modelId,
      });
    });
  };
}

// OpenAI-compatible providers. The apiKey goes in, is sealed with AES-256-GCM, and never comes out.
import { createProviderBodySchema, parseOrThrow } from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { Types } from "mongoose";
import { requireUser } from "../../auth/authenticate.ts";
import type { ServerContext } from "../../context.ts";
import { toProvider } from "../../serialize.ts";

export function providerRoutes(context: ServerContext): FastifyPluginAsync {
  const { models, secretBox } = context;
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
  };
}

// OpenAI-compatible providers. The apiKey goes in, is sealed with AES-256-GCM, and never comes out.
import type { Models } from "@gadget/db";
import { rest, UserError } from "@gadget/protocol";
import { Types } from "mongoose";
import type { RateLimits } from "../../auth/rate-limit.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { SecretBox } from "../../crypto/secret-box.ts";
import type { Removals } from "../../manage/removals.ts";
import { ownedBy } from "../../owned.ts";
import type { ProviderChecks } from "../../providers/provider-checks.ts";
import { type ProviderQuirks, withProviderLock } from "../../providers/provider-quirks.ts";
import type { QuotaDependencies } from "../../quotas.ts";
import { createWithinQuota } from "../../quotas.ts";
import { toProvider } from "../../serialize.ts";
import { type ContractApp, serve } from "../contract.ts";
import { pageOf, pageRows } from "../pages.ts";
import { userOf } from "../scopes.ts";

/** Checks reach out to the network; a user gets this many a minute. */
const checksPerMinute = 30;

export interface ProviderRouteDependencies extends QuotaDependencies {
  models: Models;
  secretBox: SecretBox;
  limits: RateLimits;
  providerChecks: ProviderChecks;
  providerQuirks: ProviderQuirks;
  signIns: SignIns;
  removals: Removals;
}

export function providerRoutes(app: ContractApp, dependencies: ProviderRouteDependencies): void {
  const { models, secretBox, limits, providerChecks } = dependencies;
  const limitChecks = (userId: string) =>
    limits.count("provider-check", [userId], checksPerMinute, 60_000);
  const ownedProvider = async (userId: string, id: string) => {
    const provider = ownedBy(await models.Provider.findById(id).lean(), userId);
    if (!provider) throw new UserError("not_found", "Provider not found");
    return provider;
  };

  serve(app, rest.providers.create, async (request, reply) => {
    const userId = userOf(request);
    const body = request.body;
    const user = new Types.ObjectId(userId);
    const provider = await createWithinQuota(
      dependencies,
      "providers",
      userId,
      () => models.Provider.countDocuments({ user }),
      () =>
        models.Provider.create({
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
        }),
    );
    return reply.status(201).send({ provider: toProvider(provider.toObject()) });
  });

  serve(app, rest.providers.list, async (request) => {
    const page = pageOf(request.query);
    const { rows, nextCursor } = pageRows(
      page,
      await models.Provider.find({ user: new Types.ObjectId(userOf(request)), ...page.filter })
        .sort({ _id: 1 })
        .limit(page.fetch)
        .lean(),
    );
    return { providers: rows.map(toProvider), nextCursor };
  });

  /**
   * Changes any field; a new apiKey replaces the stored one (sealed, never returned). A new base
   * URL or model forgets the quirks learned of the old one.
   */
  serve(app, rest.providers.update, async (request) => {
    const body = request.body;
    const owner = { _id: request.params.id, user: new Types.ObjectId(userOf(request)) };
    const { apiKey, ...fields } = body;
    const changes: Record<string, unknown> = { ...fields };
    if (apiKey !== undefined) {
      changes.apiKeyEncrypted = secretBox.seal(apiKey);
      changes.hasApiKey = apiKey.length > 0;
    }
    // Read, compared and written under the provider's lock (a turn may be teaching it a quirk).
    const provider = await withProviderLock(dependencies.locks, request.params.id, async () => {
      if (body.baseUrl !== undefined || body.modelId !== undefined) {
        const before = await models.Provider.findOne(owner)
          .select({ baseUrl: 1, modelId: 1 })
          .lean();
        if (!before) throw new UserError("not_found", "Provider not found");
        if (
          (body.baseUrl !== undefined && body.baseUrl !== before.baseUrl) ||
          (body.modelId !== undefined && body.modelId !== before.modelId)
        ) {
          changes.quirks = [];
          // Whether another model takes images is for its own check to say.
          changes.images = null;
        }
      }
      return Object.keys(changes).length === 0
        ? await models.Provider.findOne(owner).lean()
        : await models.Provider.findOneAndUpdate(
            owner,
            { $set: changes },
            { returnDocument: "after" },
          ).lean();
    });
    if (!provider) throw new UserError("not_found", "Provider not found");
    return { provider: toProvider(provider) };
  });

  serve(app, rest.providers.remove, async (request, reply) => {
    await dependencies.removals.removeProvider(
      userOf(request),
      new Types.ObjectId(request.params.id),
    );
    return reply.status(204).send();
  });

  serve(app, rest.providers.check, async (request) => {
    const userId = userOf(request);
    await limitChecks(userId);
    return providerChecks.check(userId, request.body);
  });

  serve(app, rest.providers.forgetQuirks, async (request) => {
    const provider = await ownedProvider(userOf(request), request.params.id);
    await dependencies.providerQuirks.forget(provider._id);
    return { provider: toProvider({ ...provider, quirks: [] }) };
  });

  serve(app, rest.providers.checkSaved, async (request) => {
    const userId = userOf(request);
    const provider = await ownedProvider(userId, request.params.id);
    await limitChecks(userId);
    return providerChecks.check(
      userId,
      {
        baseUrl: provider.baseUrl,
        apiKey: provider.hasApiKey ? secretBox.open(provider.apiKeyEncrypted) : "",
        modelId: provider.modelId,
      },
      {
        _id: provider._id,
        modelId: provider.modelId,
        params: provider.params ?? {},
        quirks: (provider.quirks ?? []).map((quirk) => quirk.code),
      },
    );
  });
}

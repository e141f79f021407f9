// Drone registration (single-use 15-minute tokens → a long-lived credential shown once), the
// fleet list with presence, and revocation (disconnects the drone at once, anywhere); the drone
// itself asks whether it is still registered, or unregisters.
import { type DroneDocument, isDuplicateKeyError, type Models } from "@gadget/db";
import { automaticLabelKeys, mergeLabels, rest, UserError } from "@gadget/protocol";
import type { FastifyRequest } from "fastify";
import { Types } from "mongoose";
import { bearerToken } from "../../auth/authenticate.ts";
import { requireDrone } from "../../auth/drone-credential.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { ResolvedConfig } from "../../config.ts";
import { randomSecret, sha256 } from "../../crypto/tokens.ts";
import { installLine, shellQuote } from "../../downloads/install-script.ts";
import { viewDrones } from "../../drones/drone-view.ts";
import { updateDrone, updateRegistrationToken } from "../../drones/drone-writes.ts";
import type { PresenceStore } from "../../drones/presence.ts";
import { ownedBy } from "../../owned.ts";
import type { QuotaDependencies } from "../../quotas.ts";
import { createWithinQuota } from "../../quotas.ts";
import { type DronesNamespace, droneRoom } from "../../sockets/rooms.ts";
import type { TurnService } from "../../turns/turn-service.ts";
import { type ContractApp, serve } from "../contract.ts";
import { pageOf, pageRows } from "../pages.ts";
import { userOf } from "../scopes.ts";

export interface DroneRouteDependencies extends QuotaDependencies {
  config: Pick<ResolvedConfig, "quotas" | "registrationTokenTtlMs">;
  models: Models;
  signIns: SignIns;
  presence: PresenceStore;
  /** The URL put into `gadget-drone register` commands (known once the server listens). */
  publicUrl: () => string;
  /** The drones' namespace. */
  drones: DronesNamespace;
  /** A drone's name or labels changed: browsers hear of it, and waiting turns may start. */
  droneChanged: (droneId: string, userId: string) => Promise<void>;
}

/** A user's labels never set an automatic key: the drone says those about itself. */
function userLabels(labels: readonly string[]): string[] {
  const automatic = new Set<string>(automaticLabelKeys);
  return [...new Set(labels.filter((label) => !automatic.has(label.split("=")[0] ?? "")))];
}

/** A registration token as listed: its id is the token's hash; the token is never shown again. */
function toRegistrationToken(token: {
  _id: string;
  reusable?: boolean;
  labels?: string[];
  expiresAt: Date;
  createdAt?: Date;
}) {
  return {
    _id: token._id,
    reusable: token.reusable ?? false,
    labels: token.labels ?? [],
    expiresAt: token.expiresAt,
    ...(token.createdAt ? { createdAt: token.createdAt } : {}),
  };
}

/** Revokes a drone: its credential stops working, it is disconnected, its turns are interrupted. */
function droneRevoker(dependencies: DroneRouteDependencies, turns: TurnService) {
  const { models } = dependencies;
  return async (droneId: string, userId: string, reason: string): Promise<boolean> => {
    const revoked = await dependencies.locks.with(`drone:${droneId}`, async () => {
      const drone = ownedBy(await models.Drone.findById(droneId).lean(), userId);
      if (!drone || drone.revokedAt) return false;
      await models.Drone.updateOne({ _id: droneId }, { $set: { revokedAt: new Date() } });
      // Out of presence for good before anything else: dispatch stops choosing it now.
      await dependencies.presence.revoke(droneId, userId);
      return true;
    });
    if (!revoked) return false;
    const room = droneRoom(droneId);
    dependencies.drones.to(room).emit("revoked", { reason });
    await dependencies.drones.in(room).disconnectSockets(true);
    const drone = await models.Drone.findById(droneId).select({ activeTurns: 1 }).lean();
    for (const turnId of drone?.activeTurns ?? []) {
      await turns.finishNow(
        String(turnId),
        "interrupted",
        "The drone running this turn was revoked",
      );
    }
    return true;
  };
}

/** The user's fleet: registration tokens, the list, renaming and labelling, revoking. */
export function droneRoutes(
  app: ContractApp,
  dependencies: DroneRouteDependencies,
  turns: TurnService,
): void {
  const { models, config } = dependencies;
  const revoke = droneRevoker(dependencies, turns);

  serve(app, rest.drones.createRegistrationToken, async (request, reply) => {
    const userId = userOf(request);
    const body = request.body;
    const token = randomSecret("gdr");
    const expiresAt = new Date(
      Date.now() +
        (body.expiresInHours === undefined
          ? config.registrationTokenTtlMs
          : body.expiresInHours * 3_600_000),
    );
    const tokenHash = sha256(token);
    await createWithinQuota(
      dependencies,
      "registrationTokens",
      userId,
      () =>
        models.RegistrationToken.countDocuments({
          user: new Types.ObjectId(userId),
          usedAt: null,
          expiresAt: { $gt: new Date() },
        }),
      () =>
        models.RegistrationToken.create({
          _id: tokenHash,
          user: userId,
          tokenHash,
          expiresAt,
          reusable: body.reusable,
          labels: userLabels(body.labels ?? []),
        }),
    );
    const command = `gadget-drone register --server ${shellQuote(dependencies.publicUrl())} --token ${token}`;
    // The token itself is shown this once; its id (the hash) lists, follows and revokes it.
    return reply.status(201).send({
      _id: tokenHash,
      token,
      install: installLine(dependencies.publicUrl(), token),
      expiresAt,
      command,
      registrationToken: toRegistrationToken({
        _id: tokenHash,
        reusable: body.reusable,
        labels: userLabels(body.labels ?? []),
        expiresAt,
      }),
    });
  });

  /** The user's reusable tokens still in force (a fleet's), never the tokens themselves. */
  serve(app, rest.drones.registrationTokens, async (request) => {
    const tokens = await models.RegistrationToken.find({
      user: new Types.ObjectId(userOf(request)),
      reusable: true,
      revokedAt: null,
      expiresAt: { $gt: new Date() },
    })
      .sort({ createdAt: -1 })
      .limit(100)
      .lean();
    return { registrationTokens: tokens.map(toRegistrationToken) };
  });

  /** Whether a drone registered with the token yet, and that drone as the fleet list shows it. */
  serve(app, rest.drones.registrationTokenStatus, async (request) => {
    const registration = await models.RegistrationToken.findOne({
      _id: request.params.id,
      user: new Types.ObjectId(userOf(request)),
    }).lean();
    if (!registration) throw new UserError("not_found", "Registration token not found");
    const drone = registration.drone
      ? await models.Drone.findOne({
          _id: registration.drone,
          revokedAt: null,
        }).lean<DroneDocument>()
      : null;
    if (!drone) return { used: Boolean(registration.usedAt) };
    const [view] = await viewDrones(dependencies, [drone]);
    return { used: true, drone: { _id: view!._id, name: view!.name, status: view!.status } };
  });

  /** Revokes a registration token: no drone registers with it any more (registered ones stay). */
  serve(app, rest.drones.revokeRegistrationToken, async (request, reply) => {
    const revoked = await updateRegistrationToken(
      dependencies,
      { _id: request.params.id, user: new Types.ObjectId(userOf(request)), revokedAt: null },
      { $set: { revokedAt: new Date() } },
    );
    if (!revoked) throw new UserError("not_found", "Registration token not found");
    return reply.status(204).send();
  });

  /** Renames a drone or sets its labels; turns waiting for those labels may start now. */
  serve(app, rest.drones.update, async (request) => {
    const userId = userOf(request);
    const body = request.body;
    const changes = {
      ...(body.name === undefined ? {} : { name: body.name }),
      ...(body.labels === undefined ? {} : { labels: userLabels(body.labels) }),
    };
    const drone = await updateDrone(
      dependencies,
      { _id: request.params.id, user: new Types.ObjectId(userId), revokedAt: null },
      { $set: changes },
    );
    if (!drone) throw new UserError("not_found", "Drone not found");
    if (body.labels !== undefined) {
      await dependencies.presence.relabel(
        String(drone._id),
        mergeLabels(drone.labels ?? [], drone.systemLabels ?? []),
      );
    }
    await dependencies.droneChanged(String(drone._id), userId);
    const [view] = await viewDrones(dependencies, [drone]);
    return { drone: view! };
  });

  serve(app, rest.drones.list, async (request) => {
    const page = pageOf(request.query);
    const { rows, nextCursor } = pageRows(
      page,
      await models.Drone.find({
        user: new Types.ObjectId(userOf(request)),
        revokedAt: null,
        ...page.filter,
      })
        .sort({ _id: 1 })
        .limit(page.fetch)
        .lean<DroneDocument[]>(),
    );
    return { drones: await viewDrones(dependencies, rows), nextCursor };
  });

  serve(app, rest.drones.revoke, async (request, reply) => {
    const revoked = await revoke(
      request.params.id,
      userOf(request),
      "This drone was revoked by its owner",
    );
    if (!revoked) throw new UserError("not_found", "Drone not found");
    return reply.status(204).send();
  });
}

/** What a drone calls itself: registering with a registration token, and its own credential's routes. */
export function droneSelfRoutes(
  app: ContractApp,
  dependencies: DroneRouteDependencies,
  turns: TurnService,
): void {
  const { models } = dependencies;
  const revoke = droneRevoker(dependencies, turns);

  // The registration token is the proof: in the body or as a bearer header. The body is still
  // raw here; the contract's schema checks it next.
  const tokenFromHeader = async (request: FastifyRequest) => {
    const raw = (request.body ?? {}) as Record<string, unknown>;
    request.body = { ...raw, token: raw.token ?? bearerToken(request) ?? undefined };
  };
  serve(
    app,
    rest.drones.register,
    async (request, reply) => {
      const body = request.body;
      const invalid = new UserError(
        "unauthorized",
        "Registration token is invalid, expired or already used: create a new one",
      );
      const registration = await models.RegistrationToken.findById(sha256(body.token)).lean();
      if (
        !registration ||
        registration.revokedAt ||
        (registration.usedAt && !registration.reusable) ||
        registration.expiresAt.getTime() <= Date.now()
      ) {
        throw invalid;
      }
      const credential = randomSecret("gdc");
      const droneId = new Types.ObjectId();
      // The unique index on registrationToken makes a token single use even under a race; each
      // drone of a reusable token has its own value.
      const drone = await models.Drone.create({
        _id: droneId,
        user: registration.user,
        name: body.name,
        credentialHash: sha256(credential),
        hostname: body.hostname ?? null,
        platform: body.platform ?? null,
        version: body.version ?? null,
        capacity: body.capacity ?? 1,
        labels: userLabels([...(registration.labels ?? []), ...(body.labels ?? [])]),
        registrationToken: registration.reusable
          ? `${registration._id}/${droneId}`
          : registration._id,
      }).catch((error: unknown) => {
        if (isDuplicateKeyError(error)) throw invalid;
        throw error;
      });
      await updateRegistrationToken(
        dependencies,
        { _id: registration._id },
        { $set: { usedAt: new Date(), drone: drone._id } },
      );
      // Browsers hear of it at once: the Add a drone panel and the list show it registered.
      await dependencies.droneChanged(String(drone._id), String(registration.user));
      const [view] = await viewDrones(dependencies, [drone.toObject() as DroneDocument]);
      return reply.status(201).send({ drone: view!, credential });
    },
    { preValidation: tokenFromHeader },
  );

  // A drone whose socket was refused asks here why: the socket's HTTP request is refused before
  // Socket.IO can say anything, and the drone should stop for good only when its credential is.
  serve(app, rest.drones.self, async (request) => {
    const drone = await requireDrone(dependencies, request.headers.authorization);
    const [view] = await viewDrones(dependencies, [drone]);
    return { drone: view! };
  });

  // `gadget-drone unregister`: the drone revokes itself with its own credential.
  serve(app, rest.drones.unregisterSelf, async (request, reply) => {
    const drone = await requireDrone(dependencies, request.headers.authorization);
    await revoke(String(drone._id), String(drone.user), "This drone unregistered itself");
    return reply.status(204).send();
  });
}

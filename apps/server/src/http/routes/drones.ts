// Drone registration (single-use 15-minute tokens → a long-lived credential shown once),
// the fleet list with presence, and revocation (disconnects the drone at once, anywhere).
import { type DroneDocument, isDuplicateKeyError, type Models } from "@gadget/db";
import {
  automaticLabelKeys,
  createRegistrationTokenBodySchema,
  mergeLabels,
  parseOrThrow,
  registerDroneBodySchema,
  UserError,
  updateDroneBodySchema,
} from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { Types } from "mongoose";
import { bearerToken, requireUser } from "../../auth/authenticate.ts";
import { requireDrone } from "../../auth/drone-credential.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { ResolvedConfig } from "../../config.ts";
import { randomSecret, sha256 } from "../../crypto/tokens.ts";
import { viewDrones } from "../../drones/drone-view.ts";
import type { PresenceStore } from "../../drones/presence.ts";
import { ownedBy } from "../../owned.ts";
import type { QuotaDependencies } from "../../quotas.ts";
import { createWithinQuota } from "../../quotas.ts";
import { type DronesNamespace, droneRoom } from "../../sockets/rooms.ts";
import type { TurnService } from "../../turns/turn-service.ts";
import { pageOf, pageRows } from "../pages.ts";
import { idParam } from "../params.ts";

/** Quotes a shell argument when it needs it. */
function shellQuote(value: string): string {
  return /^[A-Za-z0-9_:/.=@%+-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

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

export function droneRoutes(
  dependencies: DroneRouteDependencies,
  turns: TurnService,
): FastifyPluginAsync {
  const { models, config } = dependencies;
  return async (app) => {
    app.post("/drones/registration-tokens", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const body = parseOrThrow(
        createRegistrationTokenBodySchema,
        request.body ?? {},
        "registration token",
      );
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
      // The token itself is shown this once; its id (the hash) lists and revokes it.
      reply.status(201).send({
        token,
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
    app.get("/drones/registration-tokens", async (request) => {
      const userId = await requireUser(dependencies, request);
      const tokens = await models.RegistrationToken.find({
        user: new Types.ObjectId(userId),
        reusable: true,
        revokedAt: null,
        expiresAt: { $gt: new Date() },
      })
        .sort({ createdAt: -1 })
        .limit(100)
        .lean();
      return { registrationTokens: tokens.map(toRegistrationToken) };
    });

    /** Revokes a registration token: no drone registers with it any more (registered ones stay). */
    app.delete("/drones/registration-tokens/:id", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const id = String((request.params as { id?: unknown }).id ?? "");
      const revoked = /^[0-9a-f]{64}$/.test(id)
        ? await models.RegistrationToken.updateOne(
            { _id: id, user: new Types.ObjectId(userId), revokedAt: null },
            { $set: { revokedAt: new Date() } },
          )
        : null;
      if (!revoked?.matchedCount) throw new UserError("not_found", "Registration token not found");
      reply.status(204).send();
    });

    app.post("/drones/register", async (request, reply) => {
      const raw = (request.body ?? {}) as Record<string, unknown>;
      // The registration token is the auth: in the body or as a bearer header.
      const body = parseOrThrow(
        registerDroneBodySchema,
        { ...raw, token: raw.token ?? bearerToken(request) ?? undefined },
        "registration",
      );
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
      await models.RegistrationToken.updateOne(
        { _id: registration._id },
        { $set: { usedAt: new Date(), drone: drone._id } },
      );
      const [view] = await viewDrones(dependencies, [drone.toObject() as DroneDocument]);
      reply.status(201).send({ drone: view, credential });
    });

    /** Renames a drone or sets its labels; turns waiting for those labels may start now. */
    app.patch("/drones/:id", async (request) => {
      const userId = await requireUser(dependencies, request);
      const droneId = idParam(request.params, "id", "Drone");
      const body = parseOrThrow(updateDroneBodySchema, request.body ?? {}, "drone");
      const changes = {
        ...(body.name === undefined ? {} : { name: body.name }),
        ...(body.labels === undefined ? {} : { labels: userLabels(body.labels) }),
      };
      const drone = await models.Drone.findOneAndUpdate(
        { _id: droneId, user: new Types.ObjectId(userId), revokedAt: null },
        { $set: changes },
        { returnDocument: "after" },
      ).lean<DroneDocument>();
      if (!drone) throw new UserError("not_found", "Drone not found");
      if (body.labels !== undefined) {
        await dependencies.presence.relabel(
          String(drone._id),
          mergeLabels(drone.labels ?? [], drone.systemLabels ?? []),
        );
      }
      await dependencies.droneChanged(String(drone._id), userId);
      const [view] = await viewDrones(dependencies, [drone]);
      return { drone: view };
    });

    app.get("/drones", async (request) => {
      const userId = await requireUser(dependencies, request);
      const page = pageOf(request.query);
      const { rows, nextCursor } = pageRows(
        page,
        await models.Drone.find({
          user: new Types.ObjectId(userId),
          revokedAt: null,
          ...page.filter,
        })
          .sort({ _id: 1 })
          .limit(page.fetch)
          .lean<DroneDocument[]>(),
      );
      return { drones: await viewDrones(dependencies, rows), nextCursor };
    });

    /** Revokes a drone: its credential stops working, it is disconnected, its turns are interrupted. */
    const revoke = async (droneId: string, userId: string, reason: string): Promise<boolean> => {
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

    // A drone whose socket was refused asks here why: the socket's HTTP request is refused before
    // Socket.IO can say anything, and the drone should stop for good only when its credential is.
    app.get("/drones/self", async (request) => {
      const drone = await requireDrone(dependencies, request.headers.authorization);
      return { drone: (await viewDrones(dependencies, [drone]))[0] };
    });

    // `gadget-drone unregister`: the drone revokes itself with its own credential.
    app.delete("/drones/self", async (request, reply) => {
      const drone = await requireDrone(dependencies, request.headers.authorization);
      const droneId = String(drone._id);
      await revoke(droneId, String(drone.user), "This drone unregistered itself");
      reply.status(204).send();
    });

    app.delete("/drones/:id", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const droneId = idParam(request.params, "id", "Drone");
      if (!(await revoke(String(droneId), userId, "This drone was revoked by its owner"))) {
        throw new UserError("not_found", "Drone not found");
      }
      reply.status(204).send();
    });
  };
}

// Turns: create (202, queued), list, read, page events, stream them as Server-Sent Events,
// cancel, decide approvals, resume, revert.

import type { Models } from "@gadget/db";
import {
  approvalDecisionBodySchema,
  type CreateTurnBody,
  createTurnBodySchema,
  eventsQuerySchema,
  isFinalTurnStatus,
  parseOrThrow,
  UserError,
} from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { Types } from "mongoose";
import { requireUser } from "../../auth/authenticate.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import { ownedBy } from "../../owned.ts";
import { toTurn } from "../../serialize.ts";
import type { StorageHealth } from "../../storage/health.ts";
import type { LiveRelay, LiveSubscription } from "../../turns/live/live-relay.ts";
import type { TurnStore } from "../../turns/store/turn-store.ts";
import type { TurnReverts } from "../../turns/turn-reverts.ts";
import type { TurnService } from "../../turns/turn-service.ts";
import { pageOf, pageRows } from "../pages.ts";
import { idParam } from "../params.ts";

const keepAliveMs = 15_000;

export interface TurnRouteDependencies {
  models: Models;
  store: TurnStore;
  relay: LiveRelay;
  health: StorageHealth;
  signIns: SignIns;
  reverts: TurnReverts;
}

export function turnRoutes(
  dependencies: TurnRouteDependencies,
  turns: TurnService,
): FastifyPluginAsync {
  const { models, store, relay } = dependencies;

  const ownedTurn = async (userId: string, params: unknown) => {
    const turnId = idParam(params, "id", "Turn");
    const turn = await store.findOwned(userId, String(turnId));
    if (!turn) throw new UserError("not_found", "Turn not found");
    return turn;
  };

  return async (app) => {
    app.post("/sessions/:id/turns", async (request, reply) => {
      // The token is checked while the session and provider are read: one database round less.
      const authenticated = requireUser(dependencies, request);
      let input: { sessionId: string; body: CreateTurnBody };
      try {
        input = {
          sessionId: String(idParam(request.params, "id", "Session")),
          body: parseOrThrow(createTurnBodySchema, request.body, "turn"),
        };
      } catch (error) {
        await authenticated; // An unauthenticated caller hears 401, whatever its body.
        throw error;
      }
      const turn = await turns.create(authenticated, input.sessionId, input.body);
      reply.status(202).send({ turn: toTurn(turn) });
    });

    app.get("/sessions/:id/turns", async (request) => {
      const userId = await requireUser(dependencies, request);
      const sessionId = idParam(request.params, "id", "Session");
      const user = new Types.ObjectId(userId);
      const session = ownedBy(
        await models.ChatSession.findById(sessionId).select({ user: 1 }).lean(),
        userId,
      );
      if (!session) throw new UserError("not_found", "Session not found");
      const page = pageOf(request.query);
      const { rows, nextCursor } = pageRows(
        page,
        await models.ChatTurn.find({ session: sessionId, user, ...page.filter })
          .sort({ _id: 1 })
          .limit(page.fetch)
          .select({ messages: 0, resumeState: 0 })
          .lean(),
      );
      return { turns: rows.map(toTurn), nextCursor };
    });

    app.get("/turns/:id", async (request) => {
      const userId = await requireUser(dependencies, request);
      const turn = toTurn(await ownedTurn(userId, request.params));
      return { turn: { ...turn, waiting: dependencies.health.waitingOf(turn._id) } };
    });

    app.get("/turns/:id/events", async (request) => {
      const userId = await requireUser(dependencies, request);
      const turn = await ownedTurn(userId, request.params);
      const query = parseOrThrow(eventsQuerySchema, request.query, "query");
      const events = await relay.storedEvents(
        String(turn._id),
        query.after,
        Number.POSITIVE_INFINITY,
        query.limit,
      );
      return { events };
    });

    app.get("/turns/:id/stream", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const turn = await ownedTurn(userId, request.params);
      const lastEventId = request.headers["last-event-id"];
      const { after } = parseOrThrow(
        eventsQuerySchema.pick({ after: true }),
        {
          after:
            typeof lastEventId === "string" && lastEventId !== ""
              ? lastEventId
              : (request.query as { after?: string }).after,
        },
        "Last-Event-ID or after",
      );
      reply.hijack();
      const response = reply.raw;
      // The client may have left while the turn was read: then there is nothing to stream to
      // (and no "close" would come to end a subscription opened now).
      if (response.destroyed || request.raw.socket.destroyed) {
        response.destroy();
        return;
      }
      response.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      });
      response.write(": stream of turn events\n\n");
      let finished = false;
      let subscription: LiveSubscription | null = null;
      const keepAlive = setInterval(() => response.write(": keep-alive\n\n"), keepAliveMs);
      const finish = () => {
        if (finished) return;
        finished = true;
        clearInterval(keepAlive);
        subscription?.close();
        response.end();
      };
      // The response's "close" comes when the connection ends, however it ends.
      response.on("close", finish);
      subscription = relay.subscribe({
        turnId: String(turn._id),
        sessionId: String(turn.session),
        after,
        sink: ({ events }) => {
          for (const event of events) {
            if (finished) return;
            response.write(
              `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`,
            );
            if (event.type === "done") finish();
          }
        },
      });
      if (finished) subscription.close();
      await subscription.ready.catch(() => finish());
    });

    app.post("/turns/:id/cancel", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const turn = await ownedTurn(userId, request.params);
      const updated = await turns.cancel(userId, String(turn._id));
      reply.status(202).send({ turn: toTurn(updated) });
    });

    app.post("/turns/:id/approvals/:approvalId", async (request) => {
      const userId = await requireUser(dependencies, request);
      const turn = await ownedTurn(userId, request.params);
      const approvalId = (request.params as { approvalId: string }).approvalId;
      const body = parseOrThrow(approvalDecisionBodySchema, request.body, "approval decision");
      await turns.decide(userId, String(turn._id), approvalId, body);
      const updated = await store.findOwned(userId, String(turn._id));
      return { ok: true, turn: updated ? toTurn(updated) : toTurn(turn) };
    });

    app.post("/turns/:id/resume", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const turn = await ownedTurn(userId, request.params);
      const updated = await turns.resume(userId, String(turn._id));
      reply.status(202).send({ turn: toTurn(updated) });
    });

    app.post("/turns/:id/revert", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const turn = await ownedTurn(userId, request.params);
      if (!isFinalTurnStatus(turn.status)) {
        throw new UserError(
          "conflict",
          "This turn is still running; revert it when it has finished",
          {
            details: { reason: "turn_running", turnId: String(turn._id) },
          },
        );
      }
      const { turn: updated, result } = await dependencies.reverts.revert(turn);
      if (result.outcome === "unchanged") {
        return {
          revert: null,
          message: "This turn changed no files: nothing to revert",
          turn: toTurn(updated),
        };
      }
      reply.status(202).send({
        revert: {
          commit: result.outcome === "reverted" ? result.commit : null,
          files: result.files,
          ...(result.outcome === "reverted" && result.pushed !== undefined
            ? {
                pushed: result.pushed,
                ...(result.pushError ? { pushError: result.pushError } : {}),
              }
            : {}),
        },
        turn: toTurn(updated),
      });
    });
  };
}

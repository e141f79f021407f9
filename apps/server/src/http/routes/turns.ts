// Turns: create (202, queued), list, read, page events, stream them as Server-Sent Events,
// cancel, decide approvals, resume, revert.
import type { Models } from "@gadget/db";
import {
  eventsQuerySchema,
  isFinalTurnStatus,
  parseOrThrow,
  rest,
  UserError,
} from "@gadget/protocol";
import { Types } from "mongoose";
import type { SignIns } from "../../auth/sign-ins.ts";
import { ownedBy } from "../../owned.ts";
import { toTurn } from "../../serialize.ts";
import type { StorageHealth } from "../../storage/health.ts";
import type { LiveRelay, LiveSubscription } from "../../turns/live/live-relay.ts";
import { bytesOf } from "../../turns/store/turn-images.ts";
import type { TurnStore } from "../../turns/store/turn-store.ts";
import { toSteeringMessage } from "../../turns/turn-messages.ts";
import type { TurnReverts } from "../../turns/turn-reverts.ts";
import type { TurnService } from "../../turns/turn-service.ts";
import { type ContractApp, serve } from "../contract.ts";
import { pageOf, pageRows } from "../pages.ts";
import { pendingUserOf, userOf } from "../scopes.ts";

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
  app: ContractApp,
  dependencies: TurnRouteDependencies,
  turns: TurnService,
): void {
  const { models, store, relay } = dependencies;

  const ownedTurn = async (userId: string, turnId: string) => {
    const turn = await store.findOwned(userId, turnId);
    if (!turn) throw new UserError("not_found", "Turn not found");
    return turn;
  };

  // The token is checked while the session and provider are read: one database round less.
  serve(
    app,
    rest.sessions.createTurn,
    async (request, reply) => {
      const { turn, position } = await turns.create(
        pendingUserOf(request),
        request.params.id,
        request.body,
      );
      const waiting = position > 0 ? { reason: "session_busy" as const, position } : null;
      return reply.status(202).send({ turn: { ...toTurn(turn), waiting } });
    },
    { config: { authenticateBeside: true } },
  );

  serve(app, rest.sessions.turns, async (request) => {
    const userId = userOf(request);
    const sessionId = new Types.ObjectId(request.params.id);
    const session = ownedBy(
      await models.ChatSession.findById(sessionId).select({ user: 1 }).lean(),
      userId,
    );
    if (!session) throw new UserError("not_found", "Session not found");
    const page = pageOf(request.query);
    const { rows, nextCursor } = pageRows(
      page,
      await models.ChatTurn.find({
        session: sessionId,
        user: new Types.ObjectId(userId),
        ...page.filter,
      })
        .sort({ _id: 1 })
        .limit(page.fetch)
        .select({ messages: 0, resumeState: 0 })
        .lean(),
    );
    // Queued turns say where they wait behind the session's earlier turns.
    const waits = rows.some((turn) => turn.status === "queued")
      ? await turns.sessionWaits(String(sessionId))
      : new Map();
    return {
      turns: rows.map((turn) => ({
        ...toTurn(turn),
        waiting: waits.get(String(turn._id)) ?? null,
      })),
      nextCursor,
    };
  });

  /** A prompt image's bytes; private to its user, so the browser may keep it but no proxy. */
  serve(app, rest.turns.image, async (request, reply) => {
    const turn = await ownedTurn(userOf(request), request.params.id);
    const ref = turn.images?.find((image) => String(image._id) === request.params.imageId);
    const image = ref ? await models.TurnImage.findById(ref._id).lean() : null;
    if (!image) throw new UserError("not_found", "Image not found");
    return reply
      .header("content-type", image.mediaType)
      .header("cache-control", "private, max-age=86400, immutable")
      .send(bytesOf(image.bytes));
  });

  serve(app, rest.turns.get, async (request) => {
    const stored = await ownedTurn(userOf(request), request.params.id);
    const turn = toTurn(stored);
    const outage = dependencies.health.waitingOf(turn._id);
    const budget = stored.pendingApprovals?.find((approval) => approval.budget)?.budget;
    const waiting =
      outage ??
      (budget ? { reason: "budget" as const, ...budget } : null) ??
      (turn.status === "queued"
        ? ((await turns.sessionWaits(turn.session)).get(turn._id) ?? null)
        : null) ??
      // Stored on the turn: its drone offline, or the provider's rate limit.
      turn.waiting ??
      null;
    return { turn: { ...turn, waiting } };
  });

  serve(app, rest.turns.postMessage, async (request, reply) => {
    const message = await turns.messages.post(userOf(request), request.params.id, request.body);
    return reply.status(202).send({ message: toSteeringMessage(message) });
  });

  serve(app, rest.turns.messages, async (request) => {
    const turn = await ownedTurn(userOf(request), request.params.id);
    return { messages: (await turns.messages.list(turn)).map(toSteeringMessage) };
  });

  serve(app, rest.turns.edit, async (request) => {
    const userId = userOf(request);
    const turn = await turns.edit(userId, request.params.id, request.body.prompt);
    const waiting = (await turns.sessionWaits(String(turn.session))).get(String(turn._id)) ?? null;
    return { turn: { ...toTurn(turn), waiting } };
  });

  serve(app, rest.turns.events, async (request) => {
    const turn = await ownedTurn(userOf(request), request.params.id);
    const events = await relay.storedEvents(
      String(turn._id),
      request.query.after,
      Number.POSITIVE_INFINITY,
      request.query.limit,
    );
    return { events };
  });

  serve(app, rest.turns.stream, async (request, reply) => {
    const turn = await ownedTurn(userOf(request), request.params.id);
    const lastEventId = request.headers["last-event-id"];
    const { after } = parseOrThrow(
      eventsQuerySchema.pick({ after: true }),
      {
        after:
          typeof lastEventId === "string" && lastEventId !== "" ? lastEventId : request.query.after,
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

  serve(app, rest.turns.cancel, async (request, reply) => {
    const userId = userOf(request);
    const turn = await ownedTurn(userId, request.params.id);
    const updated = await turns.cancel(userId, String(turn._id));
    return reply.status(202).send({ turn: toTurn(updated) });
  });

  serve(app, rest.turns.decide, async (request) => {
    const userId = userOf(request);
    const turn = await ownedTurn(userId, request.params.id);
    await turns.decide(userId, String(turn._id), request.params.approvalId, request.body);
    const updated = await store.findOwned(userId, String(turn._id));
    return { ok: true as const, turn: updated ? toTurn(updated) : toTurn(turn) };
  });

  serve(app, rest.turns.resume, async (request, reply) => {
    const userId = userOf(request);
    const turn = await ownedTurn(userId, request.params.id);
    const updated = await turns.resume(userId, String(turn._id));
    return reply.status(202).send({ turn: toTurn(updated) });
  });

  serve(app, rest.turns.revert, async (request, reply) => {
    const turn = await ownedTurn(userOf(request), request.params.id);
    if (!isFinalTurnStatus(turn.status)) {
      throw new UserError(
        "conflict",
        "This turn is still running; revert it when it has finished",
        { details: { reason: "turn_running", turnId: String(turn._id) } },
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
    return reply.status(202).send({
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
}

// Turns: create (202, queued), list, read, page events, stream them as Server-Sent Events,
// cancel, decide approvals, resume.
import {
  approvalDecisionBodySchema,
  type CreateTurnBody,
  createTurnBodySchema,
  eventsQuerySchema,
  parseOrThrow,
  UserError,
} from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { Types } from "mongoose";
import { requireUser } from "../../auth/authenticate.ts";
import type { ServerContext } from "../../context.ts";
import { ownedBy } from "../../owned.ts";
import { toTurn } from "../../serialize.ts";
import type { TurnService } from "../../turns/turn-service.ts";
import { idParam } from "../params.ts";

const keepAliveMs = 15_000;

export function turnRoutes(context: ServerContext, turns: TurnService): FastifyPluginAsync {
  const { models, store, relay } = context;

  const ownedTurn = async (userId: string, params: unknown) => {
    const turnId = idParam(params, "id", "Turn");
    const turn = await store.findOwned(userId, String(turnId));
    if (!turn) throw new UserError("not_found", "Turn not found");
    return turn;
  };

  return async (app) => {
    app.post("/sessions/:id/turns", async (request, reply) => {
      // The token is checked while the session and provider are read: one database round less.
      const authenticated = requireUser(context, request);
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
      const userId = await requireUser(context, request);
      const sessionId = idParam(request.params, "id", "Session");
      const user = new Types.ObjectId(userId);
      const session = ownedBy(
        await models.ChatSession.findById(sessionId).select({ user: 1 }).lean(),
        userId,
      );
      if (!session) throw new UserError("not_found", "Session not found");
      const list = await models.ChatTurn.find({ session: sessionId, user })
        .sort({ createdAt: 1 })
        .select({ messages: 0, resumeState: 0 })
        .lean();
      return { turns: list.map(toTurn) };
    });

    app.get("/turns/:id", async (request) => {
      const userId = await requireUser(context, request);
      return { turn: toTurn(await ownedTurn(userId, request.params)) };
    });

    app.get("/turns/:id/events", async (request) => {
      const userId = await requireUser(context, request);
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
      const userId = await requireUser(context, request);
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
      response.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      });
      response.write(": stream of turn events\n\n");
      let finished = false;
      const keepAlive = setInterval(() => response.write(": keep-alive\n\n"), keepAliveMs);
      const finish = () => {
        if (finished) return;
        finished = true;
        clearInterval(keepAlive);
        subscription.close();
        response.end();
      };
      const subscription = relay.subscribe({
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
      request.raw.on("close", finish);
      await subscription.ready.catch(() => finish());
    });

    app.post("/turns/:id/cancel", async (request, reply) => {
      const userId = await requireUser(context, request);
      const turn = await ownedTurn(userId, request.params);
      const updated = await turns.cancel(userId, String(turn._id));
      reply.status(202).send({ turn: toTurn(updated) });
    });

    app.post("/turns/:id/approvals/:approvalId", async (request) => {
      const userId = await requireUser(context, request);
      const turn = await ownedTurn(userId, request.params);
      const approvalId = (request.params as { approvalId: string }).approvalId;
      const body = parseOrThrow(approvalDecisionBodySchema, request.body, "approval decision");
      await turns.decide(userId, String(turn._id), approvalId, body);
      const updated = await store.findOwned(userId, String(turn._id));
      return { ok: true, turn: updated ? toTurn(updated) : toTurn(turn) };
    });

    app.post("/turns/:id/resume", async (request, reply) => {
      const userId = await requireUser(context, request);
      const turn = await ownedTurn(userId, request.params);
      const updated = await turns.resume(userId, String(turn._id));
      reply.status(202).send({ turn: toTurn(updated) });
    });
  };
}

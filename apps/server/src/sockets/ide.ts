// The /ide namespace: browsers and scripts authenticate with a user token, get turn and drone
// updates of their user, and subscribe to turns or sessions with a seq cursor (catch-up, then live).
import { ideHandshakeSchema, subscribeSchema, UserError } from "@gadget/protocol";
import { authenticateToken } from "../auth/authenticate.ts";
import { type ServerContext, userRoom } from "../context.ts";
import { ownedBy } from "../owned.ts";
import type { LiveSubscription } from "../turns/live-relay.ts";
import { handle, refusal } from "./edge.ts";

export function attachIdeNamespace(context: ServerContext): void {
  const { ide, logger, models, relay } = context;

  ide.use((socket, next) => {
    const parsed = ideHandshakeSchema.safeParse(socket.handshake.auth);
    if (!parsed.success) {
      next(refusal("unauthorized", "Handshake needs {token}: a user token from /api/auth/login"));
      return;
    }
    authenticateToken(context, parsed.data.token)
      .then((userId) => {
        if (!userId) {
          next(refusal("unauthorized", "Invalid or expired token: log in again"));
          return;
        }
        socket.data = { userId };
        next();
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, "ide handshake failed");
        next(refusal("internal", "Internal error"));
      });
  });

  ide.on("connection", (socket) => {
    const { userId } = socket.data;
    socket.join(userRoom(userId));
    const subscriptions = new Map<string, LiveSubscription>();

    socket.on(
      "subscribe",
      handle(logger, subscribeSchema, "subscription", async (request) => {
        const key = request.turnId ? `turn:${request.turnId}` : `session:${request.sessionId}`;
        subscriptions.get(key)?.close();
        let sessionId: string;
        if (request.turnId) {
          const turn = ownedBy(
            await models.ChatTurn.findById(request.turnId).select({ session: 1, user: 1 }).lean(),
            userId,
          );
          if (!turn) throw new UserError("not_found", "Turn not found");
          sessionId = String(turn.session);
        } else {
          const session = ownedBy(
            await models.ChatSession.findById(request.sessionId).select({ _id: 1, user: 1 }).lean(),
            userId,
          );
          if (!session) throw new UserError("not_found", "Session not found");
          sessionId = String(session._id);
        }
        const subscription = relay.subscribe({
          ...(request.turnId ? { turnId: request.turnId } : {}),
          sessionId,
          after: request.after,
          sink: (message) => socket.emit("turn_events", message),
        });
        subscriptions.set(key, subscription);
        await subscription.ready;
        return {};
      }),
    );

    socket.on(
      "unsubscribe",
      handle(logger, subscribeSchema, "subscription", async (request) => {
        const key = request.turnId ? `turn:${request.turnId}` : `session:${request.sessionId}`;
        subscriptions.get(key)?.close();
        subscriptions.delete(key);
        return {};
      }),
    );

    socket.on("disconnect", () => {
      for (const subscription of subscriptions.values()) subscription.close();
      subscriptions.clear();
    });
  });
}

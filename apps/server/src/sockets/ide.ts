// The /ide namespace: browsers and scripts authenticate with a user token, get turn and drone
// updates of their user, and subscribe to turns or sessions with a seq cursor (catch-up, then live),
// or to what all their turns are doing (`activity`, live only).

import type { Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import { ideHandshakeSchema, subscribeSchema, UserError } from "@gadget/protocol";
import type { SignIns } from "../auth/sign-ins.ts";
import { ownedBy } from "../owned.ts";
import type { ActivityWatch, LiveRelay, LiveSubscription } from "../turns/live/live-relay.ts";
import { handle, refusal } from "./edge.ts";
import { type IdeNamespace, tokenRoom, userRoom } from "./rooms.ts";

/** Turns and sessions one browser connection follows at once (a tab follows one or two). */
const maxSubscriptionsPerSocket = 50;

export interface IdeSocketDependencies {
  logger: Logger;
  models: Models;
  relay: LiveRelay;
  signIns: SignIns;
}

export function attachIdeNamespace(ide: IdeNamespace, dependencies: IdeSocketDependencies): void {
  const { logger, models, relay } = dependencies;

  ide.use((socket, next) => {
    const parsed = ideHandshakeSchema.safeParse(socket.handshake.auth);
    if (!parsed.success) {
      next(refusal("unauthorized", "Handshake needs {token}: a user token from /api/auth/login"));
      return;
    }
    dependencies.signIns
      .authenticate(parsed.data.token)
      .then((signedIn) => {
        if (!signedIn) {
          next(refusal("unauthorized", "Invalid or expired token: log in again"));
          return;
        }
        socket.data = { userId: signedIn.userId, tokenHash: signedIn.tokenHash };
        next();
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, "ide handshake failed");
        next(refusal("internal", "Internal error"));
      });
  });

  ide.on("connection", (socket) => {
    const { userId, tokenHash } = socket.data;
    socket.join([userRoom(userId), tokenRoom(tokenHash)]);
    const subscriptions = new Map<string, LiveSubscription>();
    /** The user's activity subscription: one per socket, however often it is asked for. */
    let activity: ActivityWatch | null = null;
    // Subscribes still reading the database, by key: a later subscribe or an unsubscribe of the
    // same key replaces the entry, and a subscribe that finds itself replaced (or its socket gone)
    // subscribes to nothing, so no order of calls leaves a subscription nobody can close.
    const pending = new Map<string, symbol>();
    const keyOf = (request: { turnId?: string | undefined; sessionId?: string | undefined }) =>
      request.turnId ? `turn:${request.turnId}` : `session:${request.sessionId}`;
    const checkRoom = (key: string) => {
      if (!subscriptions.has(key) && subscriptions.size >= maxSubscriptionsPerSocket) {
        throw new UserError(
          "rate_limited",
          `A connection follows at most ${maxSubscriptionsPerSocket} turns and sessions at once; unsubscribe from one first`,
          { details: { limit: maxSubscriptionsPerSocket } },
        );
      }
    };

    socket.on(
      "subscribe",
      handle(logger, subscribeSchema, "subscription", async (request) => {
        if (request.activity) {
          activity ??= relay.watchActivity(userId, (notices) =>
            socket.emit("turn_activity", { activity: notices }),
          );
          return {};
        }
        const key = keyOf(request);
        checkRoom(key);
        const mine = Symbol(key);
        pending.set(key, mine);
        let sessionId: string;
        try {
          if (request.turnId) {
            const turn = ownedBy(
              await models.ChatTurn.findById(request.turnId).select({ session: 1, user: 1 }).lean(),
              userId,
            );
            if (!turn) throw new UserError("not_found", "Turn not found");
            sessionId = String(turn.session);
          } else {
            const session = ownedBy(
              await models.ChatSession.findById(request.sessionId)
                .select({ _id: 1, user: 1 })
                .lean(),
              userId,
            );
            if (!session) throw new UserError("not_found", "Session not found");
            sessionId = String(session._id);
          }
        } catch (error) {
          if (pending.get(key) === mine) pending.delete(key);
          throw error;
        }
        // Replaced by a later subscribe or unsubscribe of the same key, or the socket is gone.
        if (pending.get(key) !== mine) return {};
        pending.delete(key);
        if (socket.disconnected) return {};
        checkRoom(key);
        subscriptions.get(key)?.close();
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
        if (request.activity) {
          activity?.close();
          activity = null;
          return {};
        }
        const key = keyOf(request);
        pending.delete(key);
        subscriptions.get(key)?.close();
        subscriptions.delete(key);
        return {};
      }),
    );

    socket.on("disconnect", () => {
      activity?.close();
      activity = null;
      for (const subscription of subscriptions.values()) subscription.close();
      subscriptions.clear();
      pending.clear();
    });
  });
}

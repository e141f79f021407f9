// POST /sessions/:id/deliver: commit the session worktree's uncommitted changes and push its branch.
import type { FastifyPluginAsync } from "fastify";
import { requireUser } from "../../auth/authenticate.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { SessionDelivery } from "../../delivery/session-delivery.ts";
import { idParam } from "../params.ts";

export interface DeliveryRouteDependencies {
  signIns: SignIns;
  sessionDelivery: SessionDelivery;
}

export function deliveryRoutes(dependencies: DeliveryRouteDependencies): FastifyPluginAsync {
  return async (app) => {
    /** 202 with what the drone did (a failed push is an answer too: `pushed: false`, `error`). */
    app.post("/sessions/:id/deliver", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const sessionId = String(idParam(request.params, "id", "Session"));
      const delivery = await dependencies.sessionDelivery.deliver(userId, sessionId);
      reply.status(202).send({ delivery });
    });
  };
}

// POST /sessions/:id/deliver: commit the session worktree's uncommitted changes and push its branch.
import { rest } from "@gadget/protocol";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { SessionDelivery } from "../../delivery/session-delivery.ts";
import { type ContractApp, serve } from "../contract.ts";
import { userOf } from "../scopes.ts";

export interface DeliveryRouteDependencies {
  signIns: SignIns;
  sessionDelivery: SessionDelivery;
}

export function deliveryRoutes(app: ContractApp, dependencies: DeliveryRouteDependencies): void {
  /** 202 with what the drone did (a failed push is an answer too: `pushed: false`, `error`). */
  serve(app, rest.sessions.deliver, async (request, reply) => {
    const delivery = await dependencies.sessionDelivery.deliver(userOf(request), request.params.id);
    return reply.status(202).send({ delivery });
  });
}

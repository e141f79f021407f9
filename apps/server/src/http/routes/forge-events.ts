// Work that starts on the forge: the webhook the forge calls (proven by its signature), the
// secret a project's webhook is set up with, and the deliveries received with what each did.
import { rest } from "@gadget/protocol";
import type { ForgeEvents } from "../../forge-events/forge-events.ts";
import { type ContractApp, serve } from "../contract.ts";
import { rawBodyOf } from "../raw-body.ts";
import { userOf } from "../scopes.ts";

export interface ForgeEventRouteDependencies {
  forgeEvents: ForgeEvents;
}

/** The forge's webhook: no bearer, its signature. */
export function forgeHookRoutes(app: ContractApp, dependencies: ForgeEventRouteDependencies): void {
  serve(app, rest.forgeEvents.receive, async (request, reply) => {
    const answer = await dependencies.forgeEvents.receive(
      request.params.projectId,
      request.headers,
      rawBodyOf(request),
    );
    return reply.status(answer.status).send(answer.body);
  });
}

/** A project's forge events, for its owner. */
export function forgeEventRoutes(
  app: ContractApp,
  dependencies: ForgeEventRouteDependencies,
): void {
  serve(app, rest.forgeEvents.createSecret, async (request, reply) => {
    const answer = await dependencies.forgeEvents.createSecret(userOf(request), request.params.id);
    return reply.status(201).send(answer);
  });
  serve(app, rest.forgeEvents.list, async (request) => ({
    deliveries: await dependencies.forgeEvents.list(userOf(request), request.params.id),
  }));
}

// Rewinding a session to before one of its turns, and forking a session from one of its turns.
import { rest } from "@gadget/protocol";
import { toSession } from "../../serialize.ts";
import type { SessionRewinds } from "../../turns/session-rewinds.ts";
import { type ContractApp, serve } from "../contract.ts";
import { userOf } from "../scopes.ts";

export function rewindRoutes(app: ContractApp, rewinds: SessionRewinds): void {
  serve(app, rest.sessions.rewind, async (request) => {
    const outcome = await rewinds.rewind(userOf(request), request.params.id, request.body);
    return { session: toSession(outcome.session), rewound: outcome.rewound, code: outcome.code };
  });

  serve(app, rest.sessions.fork, async (request, reply) => {
    const session = await rewinds.fork(userOf(request), request.params.id, request.body);
    return reply.status(201).send({ session: toSession(session) });
  });
}

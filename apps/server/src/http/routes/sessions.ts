// A session: read it with its branch and where its worktree stands on the drone, rename it or change
// its mode, approval and allowed commands, delete it with its turns.
import type { Models } from "@gadget/db";
import { rest, UserError } from "@gadget/protocol";
import { Types } from "mongoose";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { SessionWorktrees } from "../../delivery/session-worktrees.ts";
import type { Removals } from "../../manage/removals.ts";
import type { Locks } from "../../redis/locks.ts";
import { toSession } from "../../serialize.ts";
import { updateSession } from "../../turns/store/session-writes.ts";
import { type ContractApp, serve } from "../contract.ts";
import { userOf } from "../scopes.ts";

export interface SessionRouteDependencies {
  models: Models;
  locks: Locks;
  signIns: SignIns;
  sessionWorktrees: SessionWorktrees;
  removals: Removals;
}

export function sessionRoutes(app: ContractApp, dependencies: SessionRouteDependencies): void {
  const { models } = dependencies;

  serve(app, rest.sessions.get, async (request) => ({
    session: await dependencies.sessionWorktrees.describe(userOf(request), request.params.id),
  }));

  /** Changes apply to the session's next turn; a running turn keeps what it started with. */
  serve(app, rest.sessions.update, async (request) => {
    const body = request.body;
    const owner = { _id: request.params.id, user: new Types.ObjectId(userOf(request)) };
    const changes = {
      ...body,
      ...(body.allowedCommands ? { allowedCommands: [...new Set(body.allowedCommands)] } : {}),
    };
    const session =
      Object.keys(changes).length === 0
        ? await models.ChatSession.findOne(owner).lean()
        : await updateSession(dependencies, owner, { $set: changes });
    if (!session) throw new UserError("not_found", "Session not found");
    return { session: toSession(session) };
  });

  /** Deletes the session with its turns and their events; 409 while a turn of it runs. */
  serve(app, rest.sessions.remove, async (request, reply) => {
    await dependencies.removals.removeSession(
      userOf(request),
      new Types.ObjectId(request.params.id),
    );
    return reply.status(204).send();
  });
}

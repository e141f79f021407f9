// A session: read it with its branch and where its worktree stands on the drone, rename it or change
// its mode, approval and allowed commands, delete it with its turns.
import type { Models } from "@gadget/db";
import { parseOrThrow, UserError, updateSessionBodySchema } from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { Types } from "mongoose";
import { requireUser } from "../../auth/authenticate.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { SessionWorktrees } from "../../delivery/session-worktrees.ts";
import type { Removals } from "../../manage/removals.ts";
import { toSession } from "../../serialize.ts";
import { idParam } from "../params.ts";

export interface SessionRouteDependencies {
  models: Models;
  signIns: SignIns;
  sessionWorktrees: SessionWorktrees;
  removals: Removals;
}

export function sessionRoutes(dependencies: SessionRouteDependencies): FastifyPluginAsync {
  const { models } = dependencies;
  return async (app) => {
    app.get("/sessions/:id", async (request) => {
      const userId = await requireUser(dependencies, request);
      const sessionId = String(idParam(request.params, "id", "Session"));
      return { session: await dependencies.sessionWorktrees.describe(userId, sessionId) };
    });

    /** Changes apply to the session's next turn; a running turn keeps what it started with. */
    app.patch("/sessions/:id", async (request) => {
      const userId = await requireUser(dependencies, request);
      const sessionId = idParam(request.params, "id", "Session");
      const body = parseOrThrow(updateSessionBodySchema, request.body ?? {}, "session");
      const owner = { _id: sessionId, user: new Types.ObjectId(userId) };
      const changes = {
        ...body,
        ...(body.allowedCommands ? { allowedCommands: [...new Set(body.allowedCommands)] } : {}),
      };
      const session =
        Object.keys(changes).length === 0
          ? await models.ChatSession.findOne(owner).lean()
          : await models.ChatSession.findOneAndUpdate(
              owner,
              { $set: changes },
              { returnDocument: "after" },
            ).lean();
      if (!session) throw new UserError("not_found", "Session not found");
      return { session: toSession(session) };
    });

    /** Deletes the session with its turns and their events; 409 while a turn of it runs. */
    app.delete("/sessions/:id", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const sessionId = idParam(request.params, "id", "Session");
      await dependencies.removals.removeSession(userId, sessionId);
      reply.status(204).send();
    });
  };
}

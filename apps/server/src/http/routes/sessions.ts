// GET /sessions/:id: one session with its branch and where its worktree stands on the drone.
import type { FastifyPluginAsync } from "fastify";
import { requireUser } from "../../auth/authenticate.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { SessionWorktrees } from "../../delivery/session-worktrees.ts";
import { idParam } from "../params.ts";

export interface SessionRouteDependencies {
  signIns: SignIns;
  sessionWorktrees: SessionWorktrees;
}

export function sessionRoutes(dependencies: SessionRouteDependencies): FastifyPluginAsync {
  return async (app) => {
    app.get("/sessions/:id", async (request) => {
      const userId = await requireUser(dependencies, request);
      const sessionId = String(idParam(request.params, "id", "Session"));
      return { session: await dependencies.sessionWorktrees.describe(userId, sessionId) };
    });
  };
}

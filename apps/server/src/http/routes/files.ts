// GET /projects/:id/files, GET /projects/:id/file, PUT /projects/:id/file: relayed to a drone;
// `?session=` (a body's `sessionId` for PUT) works in that session's worktree.
import {
  filePathQuerySchema,
  parseOrThrow,
  UserError,
  writeFileBodySchema,
} from "@gadget/protocol";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { Types } from "mongoose";
import { requireUser } from "../../auth/authenticate.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import { type FileRelayDependencies, relayFileRequest } from "../../files/file-relay.ts";
import { ownedBy } from "../../owned.ts";
import { idParam } from "../params.ts";

/** File writes carry up to 10 MiB of content, as JSON; only this route reads a body that large. */
const fileBodyLimit = 12 * 1024 * 1024;

export interface FileRouteDependencies extends FileRelayDependencies {
  signIns: SignIns;
}

export function fileRoutes(dependencies: FileRouteDependencies): FastifyPluginAsync {
  const ownedProject = async (userId: string, params: unknown) => {
    const project = ownedBy(
      await dependencies.models.Project.findById(idParam(params, "id", "Project")).lean(),
      userId,
    );
    if (!project) throw new UserError("not_found", "Project not found");
    return project;
  };

  /** The session (the user's, of this project) whose worktree a request reads, and its last drone. */
  const sessionOf = async (project: { _id: Types.ObjectId }, sessionId: string | undefined) => {
    if (!sessionId) return { sessionId: undefined, drone: null };
    const { models } = dependencies;
    const session = await models.ChatSession.findOne({ _id: sessionId, project: project._id })
      .select({ _id: 1 })
      .lean();
    if (!session) throw new UserError("not_found", "Session not found in this project");
    const last = await models.ChatTurn.findOne({ session: session._id, drone: { $ne: null } })
      .sort({ createdAt: -1, _id: -1 })
      .select({ drone: 1 })
      .lean();
    return { sessionId, drone: last?.drone ? String(last.drone) : null };
  };

  return async (app) => {
    app.get("/projects/:id/files", async (request) => {
      const userId = await requireUser(dependencies, request);
      const project = await ownedProject(userId, request.params);
      const query = parseOrThrow(filePathQuerySchema, request.query, "query");
      const session = await sessionOf(project, query.session);
      return relayFileRequest(
        dependencies,
        project,
        {
          op: "list",
          projectSlug: project.slug,
          gitUrl: project.gitUrl,
          ...(session.sessionId ? { sessionId: session.sessionId } : {}),
          path: query.path,
        },
        session.drone,
      );
    });

    app.get("/projects/:id/file", async (request) => {
      const userId = await requireUser(dependencies, request);
      const project = await ownedProject(userId, request.params);
      const query = parseOrThrow(filePathQuerySchema, request.query, "query");
      if (!query.path)
        throw new UserError("validation_failed", "Give the file's path as ?path=", {
          details: [{ path: "path", message: "required" }],
        });
      const session = await sessionOf(project, query.session);
      return relayFileRequest(
        dependencies,
        project,
        {
          op: "read",
          projectSlug: project.slug,
          gitUrl: project.gitUrl,
          ...(session.sessionId ? { sessionId: session.sessionId } : {}),
          path: query.path,
        },
        session.drone,
      );
    });

    // Authenticated before the body is read: a stranger's 12 MiB is refused unread.
    const signedIn = {
      onRequest: async (request: FastifyRequest) => void (await requireUser(dependencies, request)),
    };
    app.put("/projects/:id/file", { bodyLimit: fileBodyLimit, ...signedIn }, async (request) => {
      const userId = await requireUser(dependencies, request);
      const project = await ownedProject(userId, request.params);
      const body = parseOrThrow(writeFileBodySchema, request.body, "file");
      const session = await sessionOf(project, body.sessionId);
      return relayFileRequest(
        dependencies,
        project,
        {
          op: "write",
          projectSlug: project.slug,
          gitUrl: project.gitUrl,
          ...(session.sessionId ? { sessionId: session.sessionId } : {}),
          path: body.path,
          content: body.content,
          ...(body.baseSha ? { baseSha: body.baseSha } : {}),
        },
        session.drone,
      );
    });
  };
}

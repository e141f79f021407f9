// GET /projects/:id/files, GET /projects/:id/file, PUT /projects/:id/file and
// GET /projects/:id/commands: relayed to a drone; `?session=` (a body's `sessionId` for PUT) works
// in that session's worktree.
import { rest, UserError } from "@gadget/protocol";
import type { Types } from "mongoose";
import type { SignIns } from "../../auth/sign-ins.ts";
import { type FileRelayDependencies, relayFileRequest } from "../../files/file-relay.ts";
import { relayProjectCommands } from "../../files/project-commands.ts";
import { ownedBy } from "../../owned.ts";
import { type ContractApp, serve } from "../contract.ts";
import { userOf } from "../scopes.ts";

export interface FileRouteDependencies extends FileRelayDependencies {
  signIns: SignIns;
}

export function fileRoutes(app: ContractApp, dependencies: FileRouteDependencies): void {
  const ownedProject = async (userId: string, projectId: string) => {
    const project = ownedBy(await dependencies.models.Project.findById(projectId).lean(), userId);
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

  serve(app, rest.files.list, async (request) => {
    const project = await ownedProject(userOf(request), request.params.id);
    const session = await sessionOf(project, request.query.session);
    return relayFileRequest(
      dependencies,
      project,
      {
        op: "list",
        projectSlug: project.slug,
        gitUrl: project.gitUrl,
        ...(session.sessionId ? { sessionId: session.sessionId } : {}),
        path: request.query.path,
      },
      session.drone,
    );
  });

  serve(app, rest.files.read, async (request) => {
    const project = await ownedProject(userOf(request), request.params.id);
    const { path } = request.query;
    if (!path)
      throw new UserError("validation_failed", "Give the file's path as ?path=", {
        details: [{ path: "path", message: "required" }],
      });
    const session = await sessionOf(project, request.query.session);
    return relayFileRequest(
      dependencies,
      project,
      {
        op: "read",
        projectSlug: project.slug,
        gitUrl: project.gitUrl,
        ...(session.sessionId ? { sessionId: session.sessionId } : {}),
        path,
      },
      session.drone,
    );
  });

  // The user scope authenticates before the body is read: a stranger's 12 MiB is refused unread.
  serve(app, rest.files.write, async (request) => {
    const project = await ownedProject(userOf(request), request.params.id);
    const body = request.body;
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

  serve(app, rest.projects.commands, async (request) => {
    const project = await ownedProject(userOf(request), request.params.id);
    return relayProjectCommands(
      dependencies,
      project,
      await sessionOf(project, request.query.session),
    );
  });
}

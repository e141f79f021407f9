// GET /projects/:id/files, GET /projects/:id/file, PUT /projects/:id/file: relayed to a drone.
import {
  filePathQuerySchema,
  parseOrThrow,
  UserError,
  writeFileBodySchema,
} from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { requireUser } from "../../auth/authenticate.ts";
import type { ServerContext } from "../../context.ts";
import { relayFileRequest } from "../../files/file-relay.ts";
import { ownedBy } from "../../owned.ts";
import { idParam } from "../params.ts";

export function fileRoutes(context: ServerContext): FastifyPluginAsync {
  const ownedProject = async (userId: string, params: unknown) => {
    const project = ownedBy(
      await context.models.Project.findById(idParam(params, "id", "Project")).lean(),
      userId,
    );
    if (!project) throw new UserError("not_found", "Project not found");
    return project;
  };

  return async (app) => {
    app.get("/projects/:id/files", async (request) => {
      const userId = await requireUser(context, request);
      const project = await ownedProject(userId, request.params);
      const { path } = parseOrThrow(filePathQuerySchema, request.query, "query");
      return relayFileRequest(context, project, {
        op: "list",
        projectSlug: project.slug,
        gitUrl: project.gitUrl,
        path,
      });
    });

    app.get("/projects/:id/file", async (request) => {
      const userId = await requireUser(context, request);
      const project = await ownedProject(userId, request.params);
      const { path } = parseOrThrow(filePathQuerySchema, request.query, "query");
      if (!path)
        throw new UserError("validation_failed", "Give the file's path as ?path=", {
          details: [{ path: "path", message: "required" }],
        });
      return relayFileRequest(context, project, {
        op: "read",
        projectSlug: project.slug,
        gitUrl: project.gitUrl,
        path,
      });
    });

    app.put("/projects/:id/file", async (request) => {
      const userId = await requireUser(context, request);
      const project = await ownedProject(userId, request.params);
      const body = parseOrThrow(writeFileBodySchema, request.body, "file");
      return relayFileRequest(context, project, {
        op: "write",
        projectSlug: project.slug,
        gitUrl: project.gitUrl,
        path: body.path,
        content: body.content,
        ...(body.baseSha ? { baseSha: body.baseSha } : {}),
      });
    });
  };
}

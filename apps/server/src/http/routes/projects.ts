// Projects (with a per-user unique slug naming the drone workspace) and their chat sessions.
import { isDuplicateKeyError } from "@gadget/db";
import {
  createProjectBodySchema,
  createSessionBodySchema,
  parseOrThrow,
  UserError,
} from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { Types } from "mongoose";
import { requireUser } from "../../auth/authenticate.ts";
import type { ServerContext } from "../../context.ts";
import { ownedBy } from "../../owned.ts";
import { toProject, toSession } from "../../serialize.ts";
import { idParam } from "../params.ts";

/** "My Cool App!" → "my-cool-app". */
export function slugify(name: string): string {
  const slug = name
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 60)
    .replace(/-+$/, "");
  return slug || "project";
}

export function projectRoutes(context: ServerContext): FastifyPluginAsync {
  const { models } = context;
  return async (app) => {
    app.post("/projects", async (request, reply) => {
      const userId = await requireUser(context, request);
      const body = parseOrThrow(createProjectBodySchema, request.body, "project");
      const base = slugify(body.name);
      for (let attempt = 1; attempt <= 50; attempt++) {
        const slug = attempt === 1 ? base : `${base}-${attempt}`;
        try {
          const project = await models.Project.create({
            user: userId,
            name: body.name,
            slug,
            gitUrl: body.gitUrl,
            defaultBranch: body.defaultBranch ?? null,
            verifyCommands: body.verifyCommands ?? [],
          });
          reply.status(201).send({ project: toProject(project.toObject()) });
          return;
        } catch (error) {
          if (!isDuplicateKeyError(error)) throw error;
        }
      }
      throw new UserError("conflict", "Too many projects with this name; choose another name");
    });

    app.get("/projects", async (request) => {
      const userId = await requireUser(context, request);
      const projects = await models.Project.find({ user: new Types.ObjectId(userId) })
        .sort({ createdAt: 1 })
        .lean();
      return { projects: projects.map(toProject) };
    });

    app.post("/projects/:id/sessions", async (request, reply) => {
      const userId = await requireUser(context, request);
      const projectId = idParam(request.params, "id", "Project");
      const project = ownedBy(await models.Project.findById(projectId).lean(), userId);
      if (!project) throw new UserError("not_found", "Project not found");
      const body = parseOrThrow(createSessionBodySchema, request.body, "session");
      const session = await models.ChatSession.create({
        user: userId,
        project: project._id,
        name: body.name,
        mode: body.mode ?? "agent",
        approval: body.approval ?? "auto",
      });
      reply.status(201).send({ session: toSession(session.toObject()) });
    });

    app.get("/projects/:id/sessions", async (request) => {
      const userId = await requireUser(context, request);
      const projectId = idParam(request.params, "id", "Project");
      const user = new Types.ObjectId(userId);
      const project = ownedBy(
        await models.Project.findById(projectId).select({ user: 1 }).lean(),
        userId,
      );
      if (!project) throw new UserError("not_found", "Project not found");
      const sessions = await models.ChatSession.find({ user, project: projectId })
        .sort({ createdAt: 1 })
        .lean();
      return { sessions: sessions.map(toSession) };
    });
  };
}

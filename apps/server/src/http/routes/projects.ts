// Projects (with a per-user unique slug naming the drone workspace) and their chat sessions.
import { isDuplicateKeyError, type Models, type ProjectForgeDocument } from "@gadget/db";
import { type ForgeBody, rest, slugify as slugifyName, UserError } from "@gadget/protocol";
import { Types } from "mongoose";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { SecretBox } from "../../crypto/secret-box.ts";
import type { ProjectRemotes } from "../../manage/project-remotes.ts";
import { withProjectLock } from "../../manage/project-writes.ts";
import type { Removals } from "../../manage/removals.ts";
import { ownedBy } from "../../owned.ts";
import type { QuotaDependencies } from "../../quotas.ts";
import { createWithinQuota } from "../../quotas.ts";
import { toProject, toSession } from "../../serialize.ts";
import { type ContractApp, serve } from "../contract.ts";
import { pageOf, pageRows } from "../pages.ts";
import { userOf } from "../scopes.ts";
import { storedEnv, storedMcpServers } from "./mcp-servers.ts";

/** "My Cool App!" → "my-cool-app". */
export function slugify(name: string): string {
  return slugifyName(name, "project");
}

function dedupe(values: string[]): string[] {
  return [...new Set(values)];
}

export interface ProjectRouteDependencies extends QuotaDependencies {
  models: Models;
  signIns: SignIns;
  /** Seals forge tokens, as it seals provider keys. */
  secretBox: SecretBox;
  removals: Removals;
  projectRemotes: ProjectRemotes;
}

/**
 * The forge to store: the token sealed, or the stored one kept when the body leaves it out.
 * 400 when there is no token to keep.
 */
function storedForge(
  secretBox: SecretBox,
  body: ForgeBody,
  before: ProjectForgeDocument | null | undefined,
): ProjectForgeDocument {
  const tokenEncrypted = body.token ? secretBox.seal(body.token) : before?.tokenEncrypted;
  if (!tokenEncrypted) {
    throw new UserError("validation_failed", "Invalid project: forge.token is required");
  }
  return {
    kind: body.kind,
    apiUrl: body.apiUrl,
    tokenEncrypted,
    // Events left out keep the stored ones; the webhook secret stays until a new one is made.
    events: body.events ?? before?.events ?? null,
    eventsSecretEncrypted: before?.eventsSecretEncrypted ?? null,
  };
}

export function projectRoutes(app: ContractApp, dependencies: ProjectRouteDependencies): void {
  const { models, secretBox } = dependencies;
  const ownedProject = async (userId: string, id: string) => {
    const project = ownedBy(await models.Project.findById(id).lean(), userId);
    if (!project) throw new UserError("not_found", "Project not found");
    return project;
  };

  serve(app, rest.projects.create, async (request, reply) => {
    const userId = userOf(request);
    const body = request.body;
    const forge = body.forge ? storedForge(secretBox, body.forge, null) : null;
    // A URL that does not answer is refused before anything is stored (400 naming the problem).
    const gitUrlCheck = await dependencies.projectRemotes.checkUrl(userId, body.gitUrl);
    const mcpServers = storedMcpServers(secretBox, body.mcpServers ?? [], []);
    const env = storedEnv(secretBox, body.env ?? {}, [], "env");
    const base = slugify(body.name);
    const user = new Types.ObjectId(userId);
    const project = await createWithinQuota(
      dependencies,
      "projects",
      userId,
      () => models.Project.countDocuments({ user }),
      async () => {
        for (let attempt = 1; attempt <= 50; attempt++) {
          const slug = attempt === 1 ? base : `${base}-${attempt}`;
          try {
            return await models.Project.create({
              user: userId,
              name: body.name,
              slug,
              gitUrl: body.gitUrl,
              defaultBranch: body.defaultBranch ?? null,
              verifyCommands: body.verifyCommands ?? [],
              network: body.network ?? "none",
              allowedHosts: dedupe(body.allowedHosts ?? []),
              ...(body.branchPrefix === undefined ? {} : { branchPrefix: body.branchPrefix }),
              ...(body.delivery === undefined ? {} : { delivery: body.delivery }),
              ...(body.commitAuthor ? { commitAuthor: body.commitAuthor } : {}),
              ...(body.requires ? { requires: body.requires } : {}),
              ...(forge ? { forge } : {}),
              mcpServers,
              env,
              ...(body.hooks ? { hooks: body.hooks } : {}),
            });
          } catch (error) {
            if (!isDuplicateKeyError(error)) throw error;
          }
        }
        throw new UserError("conflict", "Too many projects with this name; choose another name");
      },
    );
    return reply.status(201).send({ project: toProject(project.toObject()), gitUrlCheck });
  });

  serve(app, rest.projects.list, async (request) => {
    const page = pageOf(request.query);
    const { rows, nextCursor } = pageRows(
      page,
      await models.Project.find({ user: new Types.ObjectId(userOf(request)), ...page.filter })
        .sort({ _id: 1 })
        .limit(page.fetch)
        .lean(),
    );
    return { projects: rows.map(toProject), nextCursor };
  });

  /** Changes a project's settings; the next turn's work order carries them. */
  serve(app, rest.projects.update, async (request) => {
    const body = request.body;
    const owner = { _id: request.params.id, user: new Types.ObjectId(userOf(request)) };
    // Read and write under one lock: the stored secrets kept must be the ones there as it writes.
    const project = await withProjectLock(dependencies.locks, owner._id, async () => {
      // A forge, MCP servers or variables may keep stored secrets and settings: read them first.
      const before =
        body.forge || body.mcpServers || body.env
          ? await models.Project.findOne(owner).select({ forge: 1, mcpServers: 1, env: 1 }).lean()
          : undefined;
      if (before === null) throw new UserError("not_found", "Project not found");
      const changes = {
        ...body,
        ...(body.allowedHosts ? { allowedHosts: dedupe(body.allowedHosts) } : {}),
        ...(body.forge ? { forge: storedForge(secretBox, body.forge, before?.forge) } : {}),
        ...(body.mcpServers
          ? {
              mcpServers: storedMcpServers(secretBox, body.mcpServers, before?.mcpServers ?? []),
            }
          : {}),
        ...(body.env ? { env: storedEnv(secretBox, body.env, before?.env ?? [], "env") } : {}),
      };
      return models.Project.findOneAndUpdate(owner, { $set: changes }, { returnDocument: "after" })
        .lean()
        .exec();
    });
    if (!project) throw new UserError("not_found", "Project not found");
    return { project: toProject(project) };
  });

  /** Deletes the project with its sessions, turns and their events; 409 while a turn of it runs. */
  serve(app, rest.projects.remove, async (request, reply) => {
    await dependencies.removals.removeProject(
      userOf(request),
      new Types.ObjectId(request.params.id),
    );
    return reply.status(204).send();
  });

  /** Clones (or fetches) the project's checkout on a drone now, so its files show before any turn. */
  serve(app, rest.projects.clone, async (request) =>
    dependencies.projectRemotes.cloneNow(userOf(request), new Types.ObjectId(request.params.id)),
  );

  serve(app, rest.projects.createSession, async (request, reply) => {
    const userId = userOf(request);
    const project = await ownedProject(userId, request.params.id);
    const body = request.body;
    const session = await models.ChatSession.create({
      user: userId,
      project: project._id,
      name: body.name,
      mode: body.mode ?? "agent",
      approval: body.approval ?? "auto",
      autoResume: body.autoResume ?? "same-drone",
    });
    return reply.status(201).send({ session: toSession(session.toObject()) });
  });

  serve(app, rest.projects.sessions, async (request) => {
    const userId = userOf(request);
    const projectId = new Types.ObjectId(request.params.id);
    const project = ownedBy(
      await models.Project.findById(projectId).select({ user: 1 }).lean(),
      userId,
    );
    if (!project) throw new UserError("not_found", "Project not found");
    const page = pageOf(request.query);
    const { rows, nextCursor } = pageRows(
      page,
      await models.ChatSession.find({
        user: new Types.ObjectId(userId),
        project: projectId,
        ...page.filter,
      })
        .sort({ _id: 1 })
        .limit(page.fetch)
        .lean(),
    );
    return { sessions: rows.map(toSession), nextCursor };
  });
}

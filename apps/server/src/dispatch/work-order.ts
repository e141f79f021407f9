// Builds a turn's work order (docs/reference.md, "The work order"): project, session, provider (with the decrypted
// key), the session's history as context, the prompt, limits, where to continue numbering events,
// and, for a resumed turn, its stored messages.
import type {
  ChatSessionDocument,
  ChatTurnDocument,
  Models,
  ProjectDocument,
  ProjectForgeDocument,
  ProjectMcpServerDocument,
  ProviderDocument,
  TurnMessageDocument,
} from "@gadget/db";
import {
  type IChatMessage,
  type ImageData,
  type IWorkOrder,
  parseOrThrow,
  SystemError,
  type WorkOrderForge,
  type WorkOrderMcpServer,
  workOrderSchema,
} from "@gadget/protocol";
import type { Types } from "mongoose";
import type { SecretBox } from "../crypto/secret-box.ts";
import { providerTakesImages } from "../turns/store/turn-images.ts";

export interface OrderParts {
  project: ProjectDocument;
  session: ChatSessionDocument;
  provider: ProviderDocument;
}

/** The ids a turn's work order is read from (a turn's own, or carried by its dispatch job). */
export interface OrderRefs {
  project: Types.ObjectId | string;
  session: Types.ObjectId | string;
  provider: Types.ObjectId | string;
}

/** Reads what a turn's work order is made of, in one parallel round. */
export async function loadOrderParts(models: Models, refs: OrderRefs): Promise<OrderParts> {
  const [project, session, provider] = await Promise.all([
    models.Project.findById(refs.project).lean<ProjectDocument>(),
    models.ChatSession.findById(refs.session).lean<ChatSessionDocument>(),
    models.Provider.findById(refs.provider).lean<ProviderDocument>(),
  ]);
  if (!project || !session || !provider) {
    throw new SystemError("internal", "The turn's project, session or provider no longer exists");
  }
  return { project, session, provider };
}

/**
 * `parts` with their session read again. Read beside the session's queue, they may predate a turn
 * ahead that has finished since: its exchange joins the history before it leaves the queue
 * (session-history.ts), so a read made after the queue said "nobody ahead" has it.
 */
export async function withFreshSession(models: Models, parts: OrderParts): Promise<OrderParts> {
  const session = await models.ChatSession.findById(parts.session._id).lean<ChatSessionDocument>();
  if (!session) throw new SystemError("internal", "The turn's session no longer exists");
  return { ...parts, session };
}

/** The work order for `turn` as claimed, its events continuing at `nextSeq`. */
export function buildWorkOrder(
  { project, session, provider }: OrderParts,
  secretBox: SecretBox,
  turn: ChatTurnDocument,
  nextSeq: number,
  steering: readonly TurnMessageDocument[] = [],
  images: readonly ImageData[] = [],
): IWorkOrder {
  const messages = turn.messages ?? [];
  return parseOrThrow(
    workOrderSchema,
    {
      turnId: String(turn._id),
      project: {
        _id: String(project._id),
        name: project.name,
        slug: project.slug,
        gitUrl: project.gitUrl,
        ...(project.defaultBranch ? { defaultBranch: project.defaultBranch } : {}),
        ...(project.verifyCommands?.length ? { verifyCommands: project.verifyCommands } : {}),
        network: { mode: project.network ?? "none", allowedHosts: project.allowedHosts ?? [] },
        // Projects stored before the field existed get the default.
        ...(project.branchPrefix === undefined ? {} : { branchPrefix: project.branchPrefix }),
        delivery: project.delivery ?? "workspace",
        ...(project.commitAuthor
          ? { commitAuthor: { name: project.commitAuthor.name, email: project.commitAuthor.email } }
          : {}),
        // The forge's token travels only to a drone that will open a pull request with it.
        ...(project.delivery === "pull-request" && project.forge
          ? { forge: openForge(project.forge, secretBox) }
          : {}),
        mcpServers: (project.mcpServers ?? []).map((server) => openMcpServer(server, secretBox)),
        env: Object.fromEntries(
          (project.env ?? []).map((entry) => [entry.name, secretBox.open(entry.valueEncrypted)]),
        ),
        hooks: project.hooks ?? {},
      },
      session: {
        _id: String(session._id),
        name: session.name,
        mode: turn.mode,
        approval: session.approval,
        allowedCommands: session.allowedCommands ?? [],
        ...(session.pullRequest
          ? { pullRequest: { url: session.pullRequest.url, number: session.pullRequest.number } }
          : {}),
        ...(session.forkedFrom?.commit ? { startFrom: session.forkedFrom.commit } : {}),
        ...(session.forgeIssue ? { closesIssue: session.forgeIssue } : {}),
      },
      provider: {
        name: provider.name,
        baseUrl: provider.baseUrl,
        apiKey: secretBox.open(provider.apiKeyEncrypted),
        modelId: provider.modelId,
        params: provider.params ?? {},
        ...(provider.escalationModelId ? { escalationModelId: provider.escalationModelId } : {}),
        ...(provider.contextWindow ? { contextWindow: provider.contextWindow } : {}),
        ...(provider.pricing ? { pricing: provider.pricing } : {}),
        quirks: (provider.quirks ?? []).map((quirk) => quirk.code),
        images: providerTakesImages(provider),
      },
      // Completed turns of the session, prompt and answer (the session history).
      context: (session.history ?? []) as IChatMessage[],
      prompt: turn.prompt,
      images,
      limits: turn.limits ?? {},
      nextSeq,
      ...(steering.length > 0
        ? {
            steering: steering.map((message) => ({
              messageId: String(message._id),
              text: message.text,
              interrupt: message.interrupt,
            })),
          }
        : {}),
      // A wait for the provider's rate limit still running goes on where the turn is taken up.
      ...(turn.quotaWait && new Date(turn.quotaWait.until).getTime() > Date.now()
        ? {
            quotaWait: {
              since: new Date(turn.quotaWait.since).toISOString(),
              until: new Date(turn.quotaWait.until).toISOString(),
            },
          }
        : {}),
      ...(messages.length > 0
        ? {
            resume: {
              messages,
              ...(turn.resumeState === null || turn.resumeState === undefined
                ? {}
                : { state: turn.resumeState }),
            },
          }
        : {}),
    },
    "work order",
  );
}

/** The project's forge with its token opened, for a drone's work order or delivery request. */
export function openForge(forge: ProjectForgeDocument, secretBox: SecretBox): WorkOrderForge {
  return { kind: forge.kind, apiUrl: forge.apiUrl, token: secretBox.open(forge.tokenEncrypted) };
}

/** An MCP server with its env values and bearer token opened, for a drone's work order. */
export function openMcpServer(
  server: ProjectMcpServerDocument,
  secretBox: SecretBox,
): WorkOrderMcpServer {
  return {
    name: server.name,
    ...(server.url ? { url: server.url } : { command: server.command ?? [] }),
    env: Object.fromEntries(
      (server.env ?? []).map((entry) => [entry.name, secretBox.open(entry.valueEncrypted)]),
    ),
    ...(server.bearerTokenEncrypted
      ? { bearerToken: secretBox.open(server.bearerTokenEncrypted) }
      : {}),
    ...(server.tools ? { tools: server.tools } : {}),
  };
}

/** A promise's outcome as a value, so one failed read does not reject its siblings' round. */
export async function outcomeOf<T>(
  promise: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

// Stored documents → the JSON shapes of the REST API (docs/reference.md). Nothing secret ever leaves through here.
import type {
  ChatSessionDocument,
  ChatTurnDocument,
  DroneDocument,
  ProjectDocument,
  ProjectMcpServerDocument,
  ProviderDocument,
  TurnEventDocument,
  UserDocument,
  WebhookDeliveryDocument,
  WebhookDocument,
} from "@gadget/db";
import type {
  ChatSession,
  ChatTurn,
  Drone,
  Project,
  ProjectMcpServer,
  Provider,
  TurnEvent,
  User,
  Webhook,
  WebhookDelivery,
} from "@gadget/protocol";
import {
  compareVersions,
  DEFAULT_BRANCH_PREFIX,
  emptyTurnStats,
  isFinalTurnStatus,
  maskedGitUrl,
  mergeLabels,
  RELEASE_VERSION,
} from "@gadget/protocol";
import type { Presence } from "./drones/presence.ts";

export function toUser(user: UserDocument): User {
  return { _id: String(user._id), email: user.email, name: user.name, createdAt: user.createdAt };
}

export function toDrone(
  drone: DroneDocument,
  presence: Presence | null,
  activeTurns: number,
): Drone {
  // While online, what the drone said when it connected: the same write that made it online.
  const version = (presence?.online ? presence.version : null) ?? drone.version ?? null;
  return {
    _id: String(drone._id),
    name: drone.name,
    status: presence?.online ? (presence.draining ? "draining" : "online") : "offline",
    activeTurns,
    capacity: presence?.capacity ?? drone.capacity,
    lastSeenAt: presence?.lastSeenAt ?? drone.lastSeenAt ?? null,
    hostname: (presence?.online ? presence.hostname : null) ?? drone.hostname ?? null,
    platform: (presence?.online ? presence.platform : null) ?? drone.platform ?? null,
    version,
    sandbox: (drone.sandbox as Drone["sandbox"]) ?? null,
    labels: mergeLabels(drone.labels ?? [], drone.systemLabels ?? []),
    ephemeral: drone.ephemeral ?? false,
    outdated: isOutdated(version),
    updateRefused: refusalAbove(drone.updateRefused ?? null, version),
  };
}

/** A refused update still ahead of the version the drone runs (past it: it updated since). */
function refusalAbove(
  refusal: DroneDocument["updateRefused"],
  version: string | null,
): Drone["updateRefused"] {
  if (!refusal) return null;
  if (version !== null && compareVersions(refusal.version, version) <= 0) return null;
  return { version: refusal.version, reason: refusal.reason, at: refusal.at };
}

/** Whether a drone's version is older than this build's release (unknown: not said to be). */
function isOutdated(version: string | null): boolean {
  return version !== null && compareVersions(version, RELEASE_VERSION) < 0;
}

export function toProvider(provider: ProviderDocument): Provider {
  return {
    _id: String(provider._id),
    name: provider.name,
    baseUrl: provider.baseUrl,
    hasApiKey: provider.hasApiKey,
    modelId: provider.modelId,
    params: provider.params ?? {},
    ...(provider.escalationModelId ? { escalationModelId: provider.escalationModelId } : {}),
    ...(provider.contextWindow ? { contextWindow: provider.contextWindow } : {}),
    ...(provider.pricing ? { pricing: provider.pricing } : {}),
    quirks: provider.quirks ?? [],
    images: provider.images ?? null,
    createdAt: provider.createdAt,
  };
}

/** What the API shows of a stored server: never a secret, only which are set. */
function toProjectMcpServer(server: ProjectMcpServerDocument): ProjectMcpServer {
  return {
    name: server.name,
    ...(server.url ? { url: server.url } : { command: server.command ?? [] }),
    envKeys: (server.env ?? []).map((entry) => entry.name),
    hasBearerToken: Boolean(server.bearerTokenEncrypted),
    ...(server.tools ? { tools: server.tools } : {}),
  };
}

export function toProject(project: ProjectDocument): Project {
  return {
    _id: String(project._id),
    name: project.name,
    slug: project.slug,
    // Credentials in the URL are the drone's to use, never the API's to answer.
    gitUrl: maskedGitUrl(project.gitUrl),
    defaultBranch: project.defaultBranch ?? null,
    verifyCommands: project.verifyCommands ?? [],
    network: project.network ?? "none",
    allowedHosts: project.allowedHosts ?? [],
    branchPrefix: project.branchPrefix ?? DEFAULT_BRANCH_PREFIX,
    delivery: project.delivery ?? "workspace",
    commitAuthor: project.commitAuthor
      ? { name: project.commitAuthor.name, email: project.commitAuthor.email }
      : null,
    // The token never leaves the server's storage: only whether one is set.
    forge: project.forge
      ? {
          kind: project.forge.kind,
          apiUrl: project.forge.apiUrl,
          hasToken: Boolean(project.forge.tokenEncrypted),
          events: project.forge.events
            ? {
                enabled: project.forge.events.enabled,
                trigger: project.forge.events.trigger,
                label: project.forge.events.label,
                assignee: project.forge.events.assignee ?? null,
                reviewFollowUps: project.forge.events.reviewFollowUps,
                checkFollowUps: project.forge.events.checkFollowUps,
              }
            : null,
          hasEventsSecret: Boolean(project.forge.eventsSecretEncrypted),
        }
      : null,
    requires: project.requires ?? [],
    mcpServers: (project.mcpServers ?? []).map(toProjectMcpServer),
    envKeys: (project.env ?? []).map((entry) => entry.name),
    hooks: project.hooks ?? {},
    createdAt: project.createdAt,
  };
}

export function toSession(session: ChatSessionDocument): ChatSession {
  return {
    _id: String(session._id),
    project: String(session.project),
    name: session.name,
    mode: session.mode,
    approval: session.approval,
    allowedCommands: session.allowedCommands ?? [],
    autoResume: session.autoResume ?? "same-drone",
    forkedFrom: session.forkedFrom
      ? { session: String(session.forkedFrom.session), turn: String(session.forkedFrom.turn) }
      : null,
    createdAt: session.createdAt,
  };
}

export function toTurn(turn: ChatTurnDocument): ChatTurn {
  return {
    _id: String(turn._id),
    session: String(turn.session),
    user: String(turn.user),
    drone: turn.drone ? String(turn.drone) : null,
    provider: String(turn.provider),
    llm: turn.llm,
    mode: turn.mode,
    prompt: turn.prompt,
    ...(turn.images?.length
      ? {
          images: turn.images.map((image) => ({
            _id: String(image._id),
            mediaType: image.mediaType,
            name: image.name ?? null,
            size: image.size,
          })),
        }
      : {}),
    status: turn.status,
    response: turn.response ?? null,
    error: turn.error ?? null,
    exitReason: turn.exitReason ?? null,
    limits: turn.limits ?? {},
    requires: turn.requires ?? [],
    stats: { ...emptyTurnStats(), ...turn.stats },
    changes: (turn.changes ?? []).map((change) => ({ path: change.path, status: change.status })),
    branch: turn.branch ?? null,
    commit: turn.commit ?? null,
    delivery: turn.delivery ?? null,
    lastSeq: turn.lastSeq ?? 0,
    createdAt: turn.createdAt,
    startedAt: turn.startedAt ?? null,
    finishedAt: turn.finishedAt ?? null,
    revertedAt: turn.revertedAt ?? null,
    revertCommit: turn.revertCommit ?? null,
    // A live turn always says what it waits on (null clears an earlier wait in browsers).
    ...(isFinalTurnStatus(turn.status)
      ? {}
      : { waiting: (turn.waiting ?? null) as ChatTurn["waiting"] }),
    rewoundAt: turn.rewoundAt ?? null,
  };
}

export function toEvent(event: Pick<TurnEventDocument, "seq" | "type" | "data" | "at">): TurnEvent {
  return { seq: event.seq, type: event.type, data: event.data, at: event.at } as TurnEvent;
}

/** A webhook as the API shows it: never its secret. */
export function toWebhook(webhook: WebhookDocument): Webhook {
  return {
    _id: String(webhook._id),
    url: webhook.url,
    events: webhook.events,
    createdAt: webhook.createdAt,
  };
}

/** A delivery as listed: what happened, never the body (the receiver has it). */
export function toWebhookDelivery(delivery: WebhookDeliveryDocument): WebhookDelivery {
  return {
    _id: delivery._id,
    webhook: String(delivery.webhook),
    event: delivery.event as WebhookDelivery["event"],
    turn: delivery.turn ? String(delivery.turn) : null,
    status: delivery.status,
    attempts: delivery.attempts ?? 0,
    lastStatusCode: delivery.lastStatusCode ?? null,
    lastError: delivery.lastError ?? null,
    createdAt: delivery.createdAt,
    lastAttemptAt: delivery.lastAttemptAt ?? null,
    deliveredAt: delivery.deliveredAt ?? null,
  };
}

// Work that starts on the forge. The forge's webhook delivery is proven by its signature, claimed
// by its delivery id (a repeat is answered, not acted on), read at the edge, and decided: an issue
// labelled, assigned or commented with the trigger starts a turn in the session `issue-<n>`; a
// trigger comment or review comment on a session's pull request follows up in that session (Gitea's
// reviews in forge-reviews.ts, failed checks and commit statuses in forge-checks.ts). Only senders
// the forge says may write are obeyed. Every delivery is recorded with what it did.
import { randomBytes } from "node:crypto";
import type { ChatTurnDocument, ForgeEventDocument, Models, ProjectDocument } from "@gadget/db";
import { isDuplicateKeyError } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import {
  type ForgeEventDelivery,
  type ForgeEventsSecretAnswer,
  type ForgeEventsSettings,
  type ForgeHookEvent,
  readForgeHook,
  UserError,
} from "@gadget/protocol";
import { Types } from "mongoose";
import type { SecretBox } from "../crypto/secret-box.ts";
import { openForge } from "../dispatch/work-order.ts";
import type { Lifecycle } from "../lifecycle.ts";
import { withProjectLock } from "../manage/project-writes.ts";
import { ownedBy } from "../owned.ts";
import type { Locks } from "../redis/locks.ts";
import { decideCheck, decideStatus } from "./forge-checks.ts";
import { ForgeClient } from "./forge-client.ts";
import type { Decision, ForgeEventTurns, StartRequest } from "./forge-event-turns.ts";
import { followUpPrompt, hasTrigger, issuePrompt } from "./forge-prompts.ts";
import { decideReview } from "./forge-reviews.ts";
import {
  forgeDeliveryId,
  forgeEventName,
  type HookHeaders,
  verifyForgeSignature,
} from "./signature.ts";

/** How many deliveries a project lists. */
const listed = 50;
/** How many deliveries a project keeps. */
const kept = 500;

export interface ForgeEventsDependencies {
  models: Models;
  secretBox: SecretBox;
  /** A project's webhook secret is stored under the project's lock. */
  locks: Locks;
  logger: Logger;
  /** Holds the server's stop until background work (pruning old deliveries) is done. */
  lifecycle: Lifecycle;
  turns: ForgeEventTurns;
  /** A `fetch` under the outbound policy, for the forge's API. */
  fetch: typeof fetch;
  /** The server's public address (known once it listens). */
  publicUrl: () => string;
}

/** What the webhook answers: 202 when acted on, 200 `{ignored}` otherwise. */
export type ForgeEventAnswer =
  | { status: 202; body: { outcome: "started" | "followed_up"; sessionId: string; turnId: string } }
  | { status: 200; body: { ignored: string } };

export class ForgeEvents {
  constructor(private readonly dependencies: ForgeEventsDependencies) {}

  /** Hears every finished turn: one a delivery started gets its forge comment edited. */
  turnFinished(turn: ChatTurnDocument): void {
    this.dependencies.turns.turnFinished(turn);
  }

  /** A new webhook secret for the project (the previous one stops working) and its URL. */
  async createSecret(userId: string, projectId: string): Promise<ForgeEventsSecretAnswer> {
    const { models, secretBox } = this.dependencies;
    const secret = `gfe_${randomBytes(32).toString("base64url")}`;
    await withProjectLock(this.dependencies.locks, projectId, async () => {
      const project = ownedBy(await models.Project.findById(projectId).lean(), userId);
      if (!project) throw new UserError("not_found", "Project not found");
      if (!project.forge) {
        throw new UserError(
          "validation_failed",
          "Set the project's forge (kind, API URL and token) before its events",
        );
      }
      await models.Project.updateOne(
        { _id: project._id },
        { $set: { "forge.eventsSecretEncrypted": secretBox.seal(secret) } },
      );
    });
    return { url: `${this.dependencies.publicUrl()}/api/forge-events/${projectId}`, secret };
  }

  /** The project's latest deliveries, newest first. */
  async list(userId: string, projectId: string): Promise<ForgeEventDelivery[]> {
    const { models } = this.dependencies;
    const project = ownedBy(await models.Project.findById(projectId).lean(), userId);
    if (!project) throw new UserError("not_found", "Project not found");
    const rows = await models.ForgeEvent.find({ project: project._id })
      .sort({ createdAt: -1, _id: -1 })
      .limit(listed)
      .lean();
    return rows.map(toDelivery);
  }

  /**
   * Handles one delivery. 404 for an unknown project, 401 for a bad signature (or no secret
   * made), 400 for a body that is not what its event sends; otherwise the answer says what it did.
   */
  async receive(
    projectId: string,
    headers: HookHeaders,
    rawBody: string,
  ): Promise<ForgeEventAnswer> {
    const { models, secretBox } = this.dependencies;
    const project = await models.Project.findById(projectId).lean();
    if (!project) throw new UserError("not_found", "Project not found");
    const forge = project.forge;
    const eventName = forge ? forgeEventName(forge.kind, headers) : "";
    const record = async (
      fields: Partial<ForgeEventDocument> & Pick<ForgeEventDocument, "outcome" | "reason">,
    ) => {
      const created = await models.ForgeEvent.create({
        project: project._id,
        user: project.user,
        deliveryId: `none-${new Types.ObjectId()}`,
        event: eventName || "(none)",
        ...fields,
      });
      // Beside the answer, not before it: only the list reads what pruning removes.
      const pruning = this.prune(project._id).catch((error: unknown) =>
        this.dependencies.logger.warn({ err: error }, "could not prune forge deliveries"),
      );
      this.dependencies.lifecycle.track(pruning);
      return created;
    };
    if (!forge?.eventsSecretEncrypted) {
      await record({ outcome: "refused", reason: "the project has no forge events secret" });
      throw new UserError(
        "unauthorized",
        "This project takes no forge events: make a secret first",
      );
    }
    if (
      !verifyForgeSignature(
        forge.kind,
        headers,
        rawBody,
        secretBox.open(forge.eventsSecretEncrypted),
      )
    ) {
      await record({ outcome: "refused", reason: "bad signature" });
      throw new UserError("unauthorized", "The signature does not match the project's secret");
    }
    // Read before the claim, which acts on nothing: the claim then records what the delivery is
    // in its one write.
    let reading: ReturnType<typeof readForgeHook> | null = null;
    let unreadable: Error | null = null;
    try {
      reading = readForgeHook(forge.kind, eventName, parseJson(rawBody));
    } catch (error) {
      unreadable = error as Error;
    }
    const event: ForgeHookEvent | null = reading && "event" in reading ? reading.event : null;
    // Claim the delivery id: a repeat finds it taken.
    const deliveryId = forgeDeliveryId(forge.kind, headers);
    let claimed: ForgeEventDocument;
    try {
      claimed = (
        await record({
          ...(deliveryId ? { deliveryId } : {}),
          ...(unreadable
            ? { outcome: "refused" as const, reason: unreadable.message.slice(0, 500) }
            : {
                outcome: "ignored" as const,
                reason: reading && "ignored" in reading ? reading.ignored : "received",
              }),
          ...(event
            ? {
                action: event.action,
                sender: event.sender.login,
                ...("issue" in event
                  ? { number: event.issue.number, onPullRequest: event.issue.isPullRequest }
                  : { commit: event.sha }),
              }
            : {}),
        })
      ).toObject();
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
      return { status: 200, body: { ignored: `delivery ${deliveryId} was received before` } };
    }
    if (unreadable) throw unreadable;
    if (!event) {
      const ignored = reading && "ignored" in reading ? reading.ignored : "received";
      return { status: 200, body: { ignored } };
    }
    const settle = (fields: Partial<ForgeEventDocument>) =>
      models.ForgeEvent.updateOne({ _id: claimed._id }, { $set: fields });
    const decision = await this.decide(project, forge.events ?? null, event);
    if ("ignored" in decision) {
      await settle({ reason: decision.ignored });
      return { status: 200, body: { ignored: decision.ignored } };
    }
    const started = await this.dependencies.turns.start(project, claimed._id, decision.start);
    if ("ignored" in started) {
      await settle({ reason: started.ignored });
      return { status: 200, body: { ignored: started.ignored } };
    }
    return {
      status: 202,
      body: {
        outcome: decision.start.followUp ? "followed_up" : "started",
        sessionId: started.sessionId,
        turnId: started.turnId,
      },
    };
  }

  /**
   * Keeps the project's newest deliveries only: anyone may post to the URL, and refused posts are
   * recorded too.
   */
  private async prune(projectId: Types.ObjectId): Promise<void> {
    const { ForgeEvent } = this.dependencies.models;
    const oldestKept = await ForgeEvent.findOne({ project: projectId })
      .sort({ createdAt: -1, _id: -1 })
      .skip(kept - 1)
      .select({ createdAt: 1 })
      .lean();
    if (oldestKept) {
      await ForgeEvent.deleteMany({ project: projectId, createdAt: { $lt: oldestKept.createdAt } });
    }
  }

  /** What the event asks for, under the project's settings, from a sender who may write. */
  private async decide(
    project: ProjectDocument,
    settings: ForgeEventsSettings | null,
    event: ForgeHookEvent,
  ): Promise<Decision> {
    const { models } = this.dependencies;
    if (!settings?.enabled) return { ignored: "forge events are off for this project" };
    if (event.type === "check") return decideCheck(models, project, settings, event);
    if (event.type === "status") {
      return decideStatus(models, project, settings, event, this.clientOrNull(project));
    }
    const { issue } = event;
    let start: StartRequest;
    // Obeyed only when the forge itself says the sender may write to the repository: asked as soon
    // as the event asks for work, beside the lookups below and the provider's (ForgeEventTurns).
    const asking = () => {
      const permission = this.client(project).refusal(event.sender);
      this.dependencies.lifecycle.track(permission);
      return permission;
    };
    // The owner's sessions of the project: the index's prefix, and the only ones a forge starts.
    const sessions = { user: project.user, project: project._id };
    if (event.type === "issue") {
      if (issue.isPullRequest) return { ignored: "pull requests are not started from" };
      const labelled =
        event.addedLabel === settings.label ||
        (event.action === "label_updated" && event.labels.includes(settings.label));
      const assigned =
        Boolean(settings.assignee) &&
        (event.addedAssignee === settings.assignee ||
          (event.action === "assigned" && event.assignees.includes(settings.assignee ?? "")));
      if (!labelled && !assigned) {
        return { ignored: `issue #${issue.number} was not labelled ${settings.label} or assigned` };
      }
      const permission = asking();
      const existing = await models.ChatSession.exists({ ...sessions, forgeIssue: issue.number });
      if (existing) return { ignored: `issue #${issue.number} already has a session` };
      start = {
        issue,
        followUp: false,
        prompt: issuePrompt(this.repositoryName(project), issue),
        permission,
      };
    } else {
      if (event.action !== "created")
        return { ignored: `a comment ${event.action} starts no work` };
      if (event.fetchLines) {
        const { models, logger } = this.dependencies;
        return decideReview({ models, logger }, this.client(project), project, settings, event);
      }
      if (!hasTrigger(event.comment.body, settings.trigger)) {
        return { ignored: `the comment does not say ${settings.trigger}` };
      }
      if (event.review && issue.isPullRequest && !settings.reviewFollowUps) {
        return { ignored: "review follow-ups are off" };
      }
      const permission = asking();
      const session = await models.ChatSession.findOne(
        issue.isPullRequest
          ? { ...sessions, "pullRequest.number": issue.number }
          : { ...sessions, forgeIssue: issue.number },
      )
        .select({ _id: 1 })
        .lean();
      if (issue.isPullRequest && !session) {
        return { ignored: `pull request #${issue.number} is not a session's` };
      }
      const comment = { author: event.sender.login, body: event.comment.body };
      start = session
        ? { issue, followUp: true, session: session._id, prompt: followUpPrompt(event), permission }
        : {
            issue,
            followUp: false,
            prompt: issuePrompt(this.repositoryName(project), issue, comment),
            permission,
          };
    }
    return { start };
  }

  private repositoryName(project: ProjectDocument): string {
    try {
      return this.client(project).repository.name;
    } catch {
      return project.name;
    }
  }

  private clientOrNull(project: ProjectDocument): ForgeClient | null {
    try {
      return this.client(project);
    } catch {
      return null;
    }
  }

  private client(project: ProjectDocument): ForgeClient {
    if (!project.forge) throw new UserError("validation_failed", "The project has no forge");
    return new ForgeClient({
      forge: openForge(project.forge, this.dependencies.secretBox),
      gitUrl: project.gitUrl,
      fetch: this.dependencies.fetch,
    });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UserError(
      "validation_failed",
      "The body is not JSON (set the webhook's content type to application/json)",
    );
  }
}

function toDelivery(row: ForgeEventDocument): ForgeEventDelivery {
  return {
    _id: String(row._id),
    deliveryId: row.deliveryId.startsWith("none-") ? null : row.deliveryId,
    event: row.event,
    action: row.action ?? null,
    sender: row.sender ?? null,
    number: row.number ?? null,
    outcome: row.outcome,
    reason: row.reason,
    sessionId: row.session ? String(row.session) : null,
    turnId: row.turn ? String(row.turn) : null,
    createdAt: row.createdAt,
  };
}

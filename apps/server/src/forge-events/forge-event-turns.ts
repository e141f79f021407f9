// The turns forge events start: the session (`issue-<n>`, made on first use, or the one whose pull
// request was commented), the turn run as the project's owner with the provider of the project's
// latest turn, and the forge user's one comment: posted with a link when the turn starts, edited
// with the summary and the pull request when it ends.
import type { ChatTurnDocument, Models, ProjectDocument } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import { type ForgeIssue, UserError } from "@gadget/protocol";
import type { Types } from "mongoose";
import type { SecretBox } from "../crypto/secret-box.ts";
import { openForge } from "../dispatch/work-order.ts";
import type { Lifecycle } from "../lifecycle.ts";
import type { TurnService } from "../turns/turn-service.ts";
import { ForgeClient } from "./forge-client.ts";
import { finishedComment, startedComment } from "./forge-prompts.ts";

/** A turn a delivery asks for. */
export interface StartRequest {
  issue: ForgeIssue;
  /** A follow-up in `session`; else a new issue session. */
  followUp: boolean;
  session?: Types.ObjectId;
  prompt: string;
  /** The forge's answer on the sender, asked beside the lookups: why they are not obeyed, or null. */
  permission?: Promise<string | null>;
}

/** What a delivery asks for, once decided. */
export type Decision = { ignored: string } | { start: StartRequest };

export interface ForgeEventTurnsDependencies {
  models: Models;
  secretBox: SecretBox;
  logger: Logger;
  lifecycle: Lifecycle;
  turns: TurnService;
  fetch: typeof fetch;
  publicUrl: () => string;
}

export class ForgeEventTurns {
  /** Comments being posted, by turn: a quick turn may end before its comment is up. */
  readonly #posting = new Map<string, Promise<number | null>>();

  constructor(private readonly dependencies: ForgeEventTurnsDependencies) {}

  /** Starts the turn and records it on the delivery; the comment is posted beside the answer. */
  async start(
    project: ProjectDocument,
    deliveryRecord: Types.ObjectId,
    request: StartRequest,
  ): Promise<{ sessionId: string; turnId: string } | { ignored: string }> {
    const { models } = this.dependencies;
    const [refused, providerId] = await Promise.all([
      request.permission ?? null,
      this.provider(project),
    ]);
    if (refused) return { ignored: refused };
    if (!providerId) return { ignored: "the project's owner has no provider to run turns with" };
    const sessionId =
      request.session ??
      (
        await models.ChatSession.create({
          user: project.user,
          project: project._id,
          name: `issue-${request.issue.number}`,
          mode: "agent",
          approval: "auto",
          forgeIssue: request.issue.number,
        })
      )._id;
    let turn: ChatTurnDocument;
    try {
      ({ turn } = await this.dependencies.turns.create(String(project.user), String(sessionId), {
        prompt: request.prompt,
        providerId: String(providerId),
      }));
    } catch (error) {
      if (error instanceof UserError) return { ignored: `no turn: ${error.message}` };
      throw error;
    }
    const turnId = String(turn._id);
    // A promise (exec), not a query: it is awaited twice and must run once.
    const recorded = models.ForgeEvent.updateOne(
      { _id: deliveryRecord },
      {
        $set: {
          outcome: request.followUp ? "followed_up" : "started",
          reason: `turn ${turnId} started`,
          // A commit status learns its pull request only once decided.
          number: request.issue.number,
          onPullRequest: request.issue.isPullRequest,
          session: sessionId,
          turn: turn._id,
        },
      },
    ).exec();
    const link = this.link(project, String(sessionId));
    const target = { number: request.issue.number, isPullRequest: request.issue.isPullRequest };
    const posting = recorded
      .then(() => this.client(project).comment(target, startedComment(link, request.followUp)))
      .then(async (commentId) => {
        await models.ForgeEvent.updateOne(
          { _id: deliveryRecord },
          { $set: { comment: commentId } },
        );
        return commentId;
      })
      .catch((error: unknown) => {
        this.dependencies.logger.warn({ err: error, turnId }, "could not comment on the forge");
        return null;
      });
    this.#posting.set(turnId, posting);
    this.dependencies.lifecycle.track(posting);
    await recorded;
    return { sessionId: String(sessionId), turnId };
  }

  /** Hears every finished turn; one a delivery started gets its comment edited. Never throws. */
  turnFinished(turn: ChatTurnDocument): void {
    const work = this.finish(turn).catch((error: unknown) =>
      this.dependencies.logger.warn(
        { err: error, turnId: String(turn._id) },
        "could not edit the forge comment",
      ),
    );
    this.dependencies.lifecycle.track(work);
  }

  private async finish(turn: ChatTurnDocument): Promise<void> {
    const { models } = this.dependencies;
    const turnId = String(turn._id);
    const posting = this.#posting.get(turnId);
    this.#posting.delete(turnId);
    const posted = posting ? await posting : null;
    const record = await models.ForgeEvent.findOne({ turn: turn._id }).lean();
    const commentId = posted ?? record?.comment ?? null;
    if (!record || !commentId || record.number === null) return;
    const project = await models.Project.findById(record.project).lean();
    if (!project?.forge) return;
    await this.client(project).editComment(
      { number: record.number, isPullRequest: record.onPullRequest },
      commentId,
      finishedComment(turn, this.link(project, String(turn.session))),
    );
  }

  /** The provider of the project's latest turn, else the owner's newest provider. */
  private async provider(project: ProjectDocument): Promise<Types.ObjectId | null> {
    const { models } = this.dependencies;
    // Both at once: the project's latest turn (by the owner's index, user + createdAt: a project's
    // turns are its owner's) and the owner's providers, newest first (a handful).
    const [last, providers] = await Promise.all([
      models.ChatTurn.findOne({ user: project.user, project: project._id })
        .sort({ createdAt: -1, _id: -1 })
        .select({ provider: 1 })
        .lean(),
      models.Provider.find({ user: project.user })
        .sort({ createdAt: -1 })
        .select({ _id: 1 })
        .lean(),
    ]);
    const kept = providers.find((provider) => last?.provider?.equals(provider._id));
    return kept?._id ?? providers[0]?._id ?? null;
  }

  private link(project: ProjectDocument, sessionId: string): string | null {
    const base = this.dependencies.publicUrl();
    return base ? `${base}/projects/${String(project._id)}/sessions/${sessionId}` : null;
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

// Deleting what a user made: a provider, a session or a project. Nothing of a deleted session or
// project stays readable (its turns, their events and webhook deliveries go with it), and nothing
// is deleted while a turn of it is queued or running (409): that turn would lose its home mid-way.
import { activeTurnStatuses, type Models } from "@gadget/db";
import { type TurnStatus, UserError } from "@gadget/protocol";
import { Types } from "mongoose";

/** Turn statuses that still need their session, project and provider. */
const unfinished: TurnStatus[] = ["queued", ...activeTurnStatuses];

/** Ids go to `$in` in pages this size (a long project history is thousands of turns). */
const idsPerDelete = 500;

export class Removals {
  constructor(private readonly dependencies: { models: Models }) {}

  /** Deletes the user's provider: 404 if not theirs, 409 while a queued or running turn uses it. */
  async removeProvider(userId: string, providerId: Types.ObjectId): Promise<void> {
    const { models } = this.dependencies;
    const user = new Types.ObjectId(userId);
    const provider = await models.Provider.findOne({ _id: providerId, user })
      .select({ _id: 1 })
      .lean();
    if (!provider) throw new UserError("not_found", "Provider not found");
    if (await models.ChatTurn.exists({ user, status: { $in: unfinished }, provider: providerId })) {
      throw new UserError(
        "conflict",
        "A queued or running turn uses this provider; delete it when the turn has ended",
      );
    }
    await models.Provider.deleteOne({ _id: providerId, user });
  }

  /** Deletes the user's session with its turns: 404 if not theirs, 409 while a turn of it runs. */
  async removeSession(userId: string, sessionId: Types.ObjectId): Promise<void> {
    const { models } = this.dependencies;
    const user = new Types.ObjectId(userId);
    const session = await models.ChatSession.findOne({ _id: sessionId, user })
      .select({ _id: 1 })
      .lean();
    if (!session) throw new UserError("not_found", "Session not found");
    if (await models.ChatTurn.exists({ user, status: { $in: unfinished }, session: sessionId })) {
      throw new UserError(
        "conflict",
        "A turn of this session is queued or running; delete it when the turn has ended",
      );
    }
    // Turns first, so a retry after a failure still finds the session; once more after it, for a
    // turn created in between.
    await this.removeTurns({ user, session: sessionId });
    await models.ChatSession.deleteOne({ _id: sessionId, user });
    await models.SessionQueue.deleteOne({ _id: sessionId });
    await this.removeTurns({ user, session: sessionId });
  }

  /** Deletes the user's project with its sessions and turns: 404 if not theirs, 409 while a turn of it runs. */
  async removeProject(userId: string, projectId: Types.ObjectId): Promise<void> {
    const { models } = this.dependencies;
    const user = new Types.ObjectId(userId);
    const project = await models.Project.findOne({ _id: projectId, user })
      .select({ _id: 1 })
      .lean();
    if (!project) throw new UserError("not_found", "Project not found");
    if (await models.ChatTurn.exists({ user, status: { $in: unfinished }, project: projectId })) {
      throw new UserError(
        "conflict",
        "A turn of this project is queued or running; delete it when the turn has ended",
      );
    }
    await this.removeTurns({ user, project: projectId });
    await models.ChatSession.deleteMany({ user, project: projectId });
    await models.Project.deleteOne({ _id: projectId, user });
    await this.removeTurns({ user, project: projectId });
  }

  /** The matching turns, their events and the webhook deliveries that carry them. */
  private async removeTurns(filter: Record<string, Types.ObjectId>): Promise<void> {
    const { models } = this.dependencies;
    const turnIds = (await models.ChatTurn.find(filter).select({ _id: 1 }).lean()).map(
      (turn) => turn._id,
    );
    for (let start = 0; start < turnIds.length; start += idsPerDelete) {
      const ids = turnIds.slice(start, start + idsPerDelete);
      // Events and deliveries before their turns, for the same reason.
      await models.TurnEvent.deleteMany({ turn: { $in: ids } });
      await models.TurnMessage.deleteMany({ turn: { $in: ids } });
      await models.TurnImage.deleteMany({ turn: { $in: ids } });
      await models.WebhookDelivery.deleteMany({ turn: { $in: ids } });
      await models.ChatTurn.deleteMany({ _id: { $in: ids } });
    }
  }
}

// Taking turns back and branching a session off. A rewind marks `turnId` and every later turn of
// the session `rewoundAt` and rebuilds the session's history (the next work orders' context)
// without them; with `code` the drone holding the session's worktree puts its branch back as it
// was before them, keeping what was there under a backup ref (and, for a project delivering pull
// requests, the session's pull request's body lists the turns kept). A fork is a new session whose
// history is the source's turns up to `turnId` and whose branch starts at that turn's commit.
import type { ChatSessionDocument, ChatTurnDocument, Models } from "@gadget/db";
import {
  type ForkBody,
  type IChatMessage,
  isFinalTurnStatus,
  pullRequestText,
  type RewindBody,
  type SessionRewindResult,
  SystemError,
  sessionRewindResultSchema,
  UserError,
} from "@gadget/protocol";
import type { SecretBox } from "../crypto/secret-box.ts";
import { openForge } from "../dispatch/work-order.ts";
import { type AskHoldersDependencies, askHolders } from "../drones/ask-holders.ts";
import { ownedBy } from "../owned.ts";
import type { Locks } from "../redis/locks.ts";
import { exchangeOf } from "./store/session-history.ts";
import { updateSession } from "./store/session-writes.ts";
import type { TurnStore } from "./store/turn-store.ts";

export interface SessionRewindsDependencies extends AskHoldersDependencies {
  store: TurnStore;
  locks: Locks;
  /** Opens the project's forge token, for the pull request a code rewind updates. */
  secretBox: SecretBox;
}

/** What a rewind did. */
export interface RewindOutcome {
  session: ChatSessionDocument;
  rewound: string[];
  code: SessionRewindResult | null;
}

type SessionTurn = Pick<
  ChatTurnDocument,
  | "_id"
  | "status"
  | "prompt"
  | "response"
  | "commit"
  | "createdAt"
  | "finishedAt"
  | "rewoundAt"
  | "steering"
>;

export class SessionRewinds {
  constructor(private readonly dependencies: SessionRewindsDependencies) {}

  /** Rewinds the user's session to before `body.turnId` (see the file's header). */
  async rewind(userId: string, sessionId: string, body: RewindBody): Promise<RewindOutcome> {
    const { models, store, locks } = this.dependencies;
    const { session, turns, index } = await this.turnOf(userId, sessionId, body.turnId);
    const busy = turns.find((turn) => !isFinalTurnStatus(turn.status));
    if (busy) {
      throw new UserError(
        "conflict",
        "A turn of this session has not finished; rewind when it has (or cancel it)",
        { details: { reason: "turn_unfinished", turnId: String(busy._id) } },
      );
    }
    const rewound = turns.slice(index);
    const rewoundIds = rewound.map((turn) => String(turn._id));
    let code: SessionRewindResult | null = null;
    if (body.code) {
      const kept = turns
        .slice(0, index)
        .filter((turn) => turn.status === "completed" && !turn.rewoundAt);
      code = await this.rewindCode(
        userId,
        session,
        rewoundIds,
        kept.map((turn) => turn.prompt),
      );
    }
    if (body.conversation !== false) {
      const now = new Date();
      for (const turn of rewound) {
        if (turn.rewoundAt) continue;
        await store.mutate(String(turn._id), (current) =>
          current.rewoundAt ? null : { set: { rewoundAt: now } },
        );
      }
      const kept = turns.slice(0, index).filter((turn) => !turn.rewoundAt);
      const history = await historyOf(models, kept);
      await updateSession({ models, locks }, { _id: session._id }, { $set: { history } });
    }
    const updated = await models.ChatSession.findById(session._id).lean<ChatSessionDocument>();
    return { session: updated ?? session, rewound: rewoundIds, code };
  }

  /** Forks the user's session at `body.turnId`: answers the new session. */
  async fork(userId: string, sessionId: string, body: ForkBody): Promise<ChatSessionDocument> {
    const { models } = this.dependencies;
    const { session, turns, index } = await this.turnOf(userId, sessionId, body.turnId);
    const turn = turns[index] as SessionTurn;
    if (!isFinalTurnStatus(turn.status)) {
      throw new UserError("conflict", "Fork from a finished turn; this one has not finished", {
        details: { reason: "turn_unfinished", turnId: String(turn._id) },
      });
    }
    const upTo = turns.slice(0, index + 1).filter((item) => !item.rewoundAt);
    // The branch starts where the last of those turns that committed left it.
    const commit = upTo.findLast((item) => item.commit)?.commit ?? null;
    const created = await models.ChatSession.create({
      user: session.user,
      project: session.project,
      name: body.name ?? `${session.name} (fork)`,
      mode: session.mode,
      approval: session.approval,
      allowedCommands: session.allowedCommands ?? [],
      history: await historyOf(models, upTo),
      rememberedTurns: [],
      forkedFrom: { session: session._id, turn: turn._id, commit },
      // Its first turn prefers the source's drone: the commit it starts at may be only there.
      drone: session.drone ?? null,
      createdAt: new Date(),
    });
    return created.toObject() as ChatSessionDocument;
  }

  /** The user's session, its turns in posting order, and where `turnId` is among them. */
  private async turnOf(userId: string, sessionId: string, turnId: string) {
    const { models } = this.dependencies;
    const session = ownedBy(
      await models.ChatSession.findById(sessionId).lean<ChatSessionDocument>(),
      userId,
    );
    if (!session) throw new UserError("not_found", "Session not found");
    const turns = await models.ChatTurn.find({ session: session._id })
      .select({
        status: 1,
        prompt: 1,
        response: 1,
        commit: 1,
        createdAt: 1,
        finishedAt: 1,
        rewoundAt: 1,
        steering: 1,
      })
      .sort({ createdAt: 1, _id: 1 })
      .lean<SessionTurn[]>();
    const index = turns.findIndex((turn) => String(turn._id) === turnId);
    if (index === -1) throw new UserError("not_found", "Turn not found in this session");
    return { session, turns, index };
  }

  /** Asks the online drone holding the session's worktree to rewind it. */
  private async rewindCode(
    userId: string,
    session: ChatSessionDocument,
    turnIds: string[],
    keptPrompts: string[],
  ): Promise<SessionRewindResult> {
    const { models, secretBox } = this.dependencies;
    const project = await models.Project.findById(session.project)
      .select({ slug: 1, name: 1, delivery: 1, forge: 1, gitUrl: 1, defaultBranch: 1 })
      .lean();
    if (!project) throw new UserError("not_found", "The session's project no longer exists");
    const answer = await askHolders(this.dependencies, {
      userId,
      projectSlug: project.slug,
      event: "session_rewind",
      request: {
        sessionId: String(session._id),
        projectSlug: project.slug,
        turnIds,
        // A delivered branch would otherwise still hold the rewound turns on the remote.
        deliver: (project.delivery ?? "workspace") !== "workspace",
        // Only an existing pull request is updated; a rewind opens none.
        ...(project.delivery === "pull-request" && project.forge && session.pullRequest
          ? {
              pullRequest: {
                forge: openForge(project.forge, secretBox),
                gitUrl: project.gitUrl,
                ...(project.defaultBranch ? { base: project.defaultBranch } : {}),
                ...pullRequestText(session.name, keptPrompts, session.forgeIssue ?? undefined),
                existing: { url: session.pullRequest.url, number: session.pullRequest.number },
              },
            }
          : {}),
      },
      ...(session.drone ? { preferred: String(session.drone) } : {}),
      passOn: (error) =>
        (error.details as { reason?: unknown } | undefined)?.reason === "no_worktree",
      parse: (result) => sessionRewindResultSchema.parse(result),
    });
    if (answer.answered) return answer.result;
    throw new SystemError(
      "no_drone_online",
      `No online drone holds this session's worktree of project "${project.name}": start the drone that ran the session's turns, then rewind again`,
    );
  }
}

/** The context made of `turns`: each completed turn's exchange, in order. */
async function historyOf(models: Models, turns: readonly SessionTurn[]): Promise<IChatMessage[]> {
  const completed = turns.filter((turn) => turn.status === "completed");
  return (await Promise.all(completed.map((turn) => exchangeOf(models, turn)))).flat();
}

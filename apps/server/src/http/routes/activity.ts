// The user's turns across projects, newest first (GET /api/turns), and how many run, wait on them
// or wait for a drone (GET /api/turns/summary): the Activity page and the top bar.
import type { ChatTurnDocument, Models } from "@gadget/db";
import {
  type ActivityTurn,
  activityCursor,
  isFinalTurnStatus,
  labelsMatch,
  parseActivityCursor,
  rest,
  summaryKeyOf,
  type TurnSummary,
} from "@gadget/protocol";
import { Types } from "mongoose";
import type { SignIns } from "../../auth/sign-ins.ts";
import { labelWaitWords } from "../../dispatch/turn-notes.ts";
import type { PresenceStore } from "../../drones/presence.ts";
import { toEvent, toTurn } from "../../serialize.ts";
import { activityOf } from "../../turns/live/turn-activity.ts";
import { type ContractApp, serve } from "../contract.ts";
import { userOf } from "../scopes.ts";

/** A list shows the start of a prompt; the session page has the whole of it. */
const promptChars = 300;
/** Events read back from a held turn's last stored seq to find its pass and tool. */
const tailEvents = 100;
const liveStatuses = ["queued", "dispatched", "processing", "awaiting_approval"] as const;

export interface ActivityRouteDependencies {
  models: Models;
  presence: PresenceStore;
  signIns: SignIns;
}

export function activityRoutes(app: ContractApp, dependencies: ActivityRouteDependencies): void {
  const { models, presence } = dependencies;

  /** Each live turn of the user by status (the index on user, status, createdAt answers it). */
  const liveTurnsOf = (user: Types.ObjectId) =>
    models.ChatTurn.find({ user, status: { $in: [...liveStatuses] } })
      .select({ status: 1 })
      .lean();

  const summaryOf = (turns: Array<Pick<ChatTurnDocument, "status">>): TurnSummary => {
    const summary: TurnSummary = { running: 0, awaitingApproval: 0, queued: 0 };
    for (const turn of turns) {
      const key = summaryKeyOf(turn.status);
      if (key) summary[key] += 1;
    }
    return summary;
  };

  /** What a held turn is doing, from its latest stored events. */
  const activityOfTurn = async (turn: ChatTurnDocument) => {
    const events = await models.TurnEvent.find({
      turn: turn._id,
      seq: { $gt: Math.max(0, (turn.lastSeq ?? 0) - tailEvents) },
    })
      .sort({ seq: 1 })
      .limit(2_000)
      .lean();
    const change = activityOf(events.map(toEvent));
    if (!change) return undefined;
    // Only the approvals the turn still waits on (a decision leaves no event behind).
    const pending = new Set((turn.pendingApprovals ?? []).map((approval) => approval.id));
    change.approvals = (change.approvals ?? []).filter((approval) => pending.has(approval.id));
    return change;
  };

  /** Why each queued turn waits, in words. */
  const queuedReasons = async (
    userId: string,
    queued: ChatTurnDocument[],
    droneNames: Map<string, string>,
  ): Promise<Map<string, string>> => {
    const reasons = new Map<string, string>();
    if (queued.length === 0) return reasons;
    const [fleet, live] = await Promise.all([
      presence.ofUser(userId),
      liveTurnsOf(new Types.ObjectId(userId)),
    ]);
    // Where each waits behind its session's earlier turns (the session's queue, read by `_id`).
    const queues = await models.SessionQueue.find({
      _id: { $in: [...new Set(queued.map((turn) => String(turn.session)))] },
    }).lean();
    const places = new Map(
      queues.flatMap((queue) => queue.turns.map((turnId, index) => [String(turnId), index])),
    );
    const online = fleet.filter((drone) => drone.presence.online);
    const capacity = online.reduce((sum, drone) => sum + (drone.presence.capacity ?? 1), 0);
    const held = live.filter((turn) => turn.status !== "queued").length;
    for (const turn of queued) {
      const requested = turn.requestedDrone ? String(turn.requestedDrone) : null;
      let reason: string;
      const place = places.get(String(turn._id)) ?? 0;
      const labels = turn.waitingForLabels ? turn.waitingForLabels.split(", ") : null;
      if (place > 0) {
        reason = `Waiting for the session's earlier turns (position ${place})`;
      } else if (requested) {
        const name = droneNames.get(requested) ?? "the drone you chose";
        reason = online.some((drone) => drone.droneId === requested)
          ? `Waiting for ${name} to finish a turn`
          : `Waiting for ${name} to come online`;
      } else if (labels && !online.some((drone) => labelsMatch(drone.presence.labels, labels))) {
        // Dispatch found no drone with the labels it requires (the project's too); still none.
        reason = labelWaitWords(labels);
      } else if (online.length === 0) {
        reason = "No drone of yours is online";
      } else if (held >= capacity) {
        reason = `Your drones are busy (${held} of ${capacity} turns running)`;
      } else {
        reason = "Waiting for a drone";
      }
      reasons.set(String(turn._id), reason);
    }
    return reasons;
  };

  serve(app, rest.turns.list, async (request) => {
    const userId = userOf(request);
    const query = request.query;
    const user = new Types.ObjectId(userId);
    const filter: Record<string, unknown> = { user };
    if (query.status) {
      filter.status = query.status.length === 1 ? query.status[0] : { $in: query.status };
    }
    if (query.project) filter.project = new Types.ObjectId(query.project);
    if (query.drone) filter.drone = new Types.ObjectId(query.drone);
    if (query.cursor) {
      const { createdAt, id } = parseActivityCursor(query.cursor);
      filter.$or = [
        { createdAt: { $lt: createdAt } },
        { createdAt, _id: { $lt: new Types.ObjectId(id) } },
      ];
    }
    const found = await models.ChatTurn.find(filter)
      .sort({ createdAt: -1, _id: -1 })
      .limit(query.limit + 1)
      .select({ messages: 0, resumeState: 0, response: 0 })
      .lean<ChatTurnDocument[]>();
    const page = found.slice(0, query.limit);
    const nextCursor =
      found.length > query.limit && page.length > 0 ? activityCursor(page.at(-1)!) : null;

    const ids = (values: Array<Types.ObjectId | null | undefined>) => [
      ...new Set(values.filter((value): value is Types.ObjectId => Boolean(value)).map(String)),
    ];
    const droneIds = ids(page.flatMap((turn) => [turn.drone, turn.requestedDrone]));
    // Names by id, one query per collection (no $lookup on FerretDB).
    const [projects, sessions, drones] = await Promise.all([
      models.Project.find({ _id: { $in: ids(page.map((turn) => turn.project)) } })
        .select({ name: 1 })
        .lean(),
      models.ChatSession.find({ _id: { $in: ids(page.map((turn) => turn.session)) } })
        .select({ name: 1 })
        .lean(),
      droneIds.length > 0
        ? models.Drone.find({ _id: { $in: droneIds } })
            .select({ name: 1 })
            .lean()
        : [],
    ]);
    const names = (rows: Array<{ _id: unknown; name: string }>) =>
      new Map(rows.map((row) => [String(row._id), row.name]));
    const projectNames = names(projects);
    const sessionNames = names(sessions);
    const droneNames = names(drones);
    const held = page.filter((turn) => turn.status !== "queued" && !isFinalTurnStatus(turn.status));
    const [activities, reasons] = await Promise.all([
      Promise.all(
        held.map(async (turn) => [String(turn._id), await activityOfTurn(turn)] as const),
      ),
      queuedReasons(
        userId,
        page.filter((turn) => turn.status === "queued"),
        droneNames,
      ),
    ]);
    const activityById = new Map(activities);
    const turns = page.map((turn): ActivityTurn => {
      const { response: _response, ...shown } = toTurn({ ...turn, response: null });
      const id = String(turn._id);
      const activity = activityById.get(id);
      const reason = reasons.get(id);
      return {
        ...shown,
        prompt:
          turn.prompt.length > promptChars ? `${turn.prompt.slice(0, promptChars)}…` : turn.prompt,
        project: String(turn.project),
        projectName: projectNames.get(String(turn.project)) ?? "(deleted project)",
        sessionName: sessionNames.get(String(turn.session)) ?? "(deleted session)",
        droneName: turn.drone ? (droneNames.get(String(turn.drone)) ?? null) : null,
        ...(activity ? { activity } : {}),
        ...(reason ? { queuedReason: reason } : {}),
      };
    });
    return { turns, nextCursor };
  });

  serve(app, rest.turns.summary, async (request) =>
    summaryOf(await liveTurnsOf(new Types.ObjectId(userOf(request)))),
  );
}

// A project's git remote seen from one of the user's drones (turns clone there, with the drone's
// credentials): the URL checked when the project is added, and "Clone now" before any turn.
import {
  type Ack,
  type GitRemoteCheckResult,
  type GitUrlCheck,
  gitRemoteCheckResultSchema,
  type ProjectCloneAnswer,
  projectCloneResultSchema,
  relayedCode,
  SystemError,
  UserError,
} from "@gadget/protocol";
import { Types } from "mongoose";
import type { AskHoldersDependencies } from "../drones/ask-holders.ts";
import { onlineDrones } from "../drones/online-drones.ts";
import { droneRoom } from "../sockets/rooms.ts";

/** The drone gives `git ls-remote` 10 s; a little more for the round trip. */
const remoteCheckWaitMs = 12_000;
/** A first clone of a large repository takes minutes. */
const cloneWaitMs = 10 * 60_000;

export class ProjectRemotes {
  constructor(private readonly dependencies: AskHoldersDependencies) {}

  /**
   * Checks `gitUrl` through one online drone. A URL that does not answer is a 400 naming the
   * problem; with no drone to ask (or none answering in time) the answer says it was not checked.
   * @example const check = await remotes.checkUrl(userId, "https://github.com/org/repo.git");
   */
  async checkUrl(userId: string, gitUrl: string): Promise<GitUrlCheck> {
    // One drone: a silent one (older, or busy) costs the user one wait, not one per drone.
    for (const drone of (await this.drones(userId)).slice(0, 1)) {
      const result = await this.ask<GitRemoteCheckResult>(
        drone._id,
        "git_remote_check",
        { gitUrl },
        remoteCheckWaitMs,
        (value) => gitRemoteCheckResultSchema.parse(value),
      ).catch(() => null);
      if (!result) continue;
      if (!result.ok) {
        throw new UserError("validation_failed", `Invalid project: gitUrl: ${result.message}`, {
          details: [{ path: "gitUrl", message: result.message, problem: result.problem }],
        });
      }
      return {
        checked: true,
        drone: drone.name,
        defaultBranch: result.defaultBranch,
        message: `Checked from drone ${drone.name}: the repository answers`,
      };
    }
    return {
      checked: false,
      message:
        "Not checked: no drone of yours is online to ask (or none answered); the first turn will clone it",
    };
  }

  /**
   * Clones or fetches the project's checkout on a drone now: one already holding it first.
   * 404 for another user's project, 503 with no drone online, 400 when the clone fails.
   */
  async cloneNow(userId: string, projectId: Types.ObjectId): Promise<ProjectCloneAnswer> {
    const { models } = this.dependencies;
    const project = await models.Project.findOne({
      _id: projectId,
      user: new Types.ObjectId(userId),
    }).lean();
    if (!project) throw new UserError("not_found", "Project not found");
    const drones = await this.drones(userId, project.slug);
    if (drones.length === 0) {
      throw new SystemError("no_drone_online", "No drone of yours is online to clone the project");
    }
    for (const drone of drones) {
      let result: ProjectCloneAnswer | null;
      try {
        result = {
          ...(await this.ask(
            drone._id,
            "project_clone",
            {
              projectSlug: project.slug,
              gitUrl: project.gitUrl,
              ...(project.defaultBranch ? { defaultBranch: project.defaultBranch } : {}),
            },
            cloneWaitMs,
            (value) => projectCloneResultSchema.parse(value),
          )),
          drone: { _id: drone._id, name: drone.name },
        };
      } catch (error) {
        // The drone's refusal is the answer; silence sends the request to the next drone.
        if (error instanceof UserError) throw error;
        result = null;
      }
      if (result) return result;
    }
    throw new SystemError("unavailable", "No drone answered in time; try again");
  }

  /** The user's online drones with their names; holders of `slug` first. */
  private async drones(
    userId: string,
    slug?: string,
  ): Promise<Array<{ _id: string; name: string }>> {
    const online = await onlineDrones(this.dependencies, userId);
    if (online.length === 0) return [];
    const names = new Map(
      (
        await this.dependencies.models.Drone.find({ _id: { $in: online.map((d) => d.droneId) } })
          .select({ name: 1 })
          .lean()
      ).map((drone) => [String(drone._id), drone.name]),
    );
    const holds = (presence: { workspaces: string[] }) =>
      slug !== undefined && presence.workspaces.includes(slug);
    return online
      .sort((a, b) => Number(holds(b.presence)) - Number(holds(a.presence)))
      .map(({ droneId }) => ({ _id: droneId, name: names.get(droneId) ?? droneId }));
  }

  /**
   * One drone's answer. A refusal is thrown as the drone's error (a failed clone as a 400 on the
   * project's URL); no answer in time throws a SystemError, and the next drone is asked.
   */
  private async ask<T>(
    droneId: string,
    event: "git_remote_check" | "project_clone",
    request: object,
    timeoutMs: number,
    parse: (value: unknown) => T,
  ): Promise<T> {
    let answers: Array<Ack<{ result: unknown }>>;
    try {
      answers = (await this.dependencies.drones
        .to(droneRoom(droneId))
        .timeout(timeoutMs)
        // biome-ignore lint/suspicious/noExplicitAny: both requests share this path
        .emitWithAck(event, request as any)) as Array<Ack<{ result: unknown }>>;
    } catch (error) {
      throw new SystemError("unavailable", `The drone did not answer ${event} in time`, {
        cause: error,
      });
    }
    const answer = answers[0];
    if (!answer) throw new SystemError("unavailable", "The drone is not connected");
    if (!answer.ok) {
      if (answer.error.code === "clone_failed") {
        throw new UserError(
          "validation_failed",
          `Could not clone the project: ${answer.error.message}`,
          {
            details: [{ path: "gitUrl", message: answer.error.message }],
          },
        );
      }
      throw new UserError(relayedCode(answer.error.code), answer.error.message, {
        details: answer.error.details,
      });
    }
    try {
      return parse(answer.result);
    } catch (error) {
      throw new SystemError("internal", `The drone answered ${event} with something unreadable`, {
        cause: error,
      });
    }
  }
}

// "Check" a provider for its user. The check runs where turns really call the provider — one of
// the user's online drones (a model server on the user's laptop is reachable only from there) —
// and on the server, through its outbound policy, only when no drone is online. Checks are
// bounded per user and per server process: each holds a connection and up to a MiB.
import {
  checkAndProbe,
  type LearnedQuirk,
  type ModelListSender,
  maxModelListBytes,
  maxProbeAnswerBytes,
  type ProviderCheckOptions,
} from "@gadget/agent";
import type { Models } from "@gadget/db";
import {
  type Ack,
  type ModelParams,
  type ProviderCheckResult,
  type ProviderQuirkCode,
  providerCheckResultSchema,
  providerQuirkCodeSchema,
  UserError,
} from "@gadget/protocol";
import type { Types } from "mongoose";
import { z } from "zod";
import type { ResolvedConfig } from "../config.ts";
import { onlineDrones } from "../drones/online-drones.ts";
import type { PresenceStore } from "../drones/presence.ts";
import type { OutboundPolicy } from "../outbound/outbound-policy.ts";
import type { Locks } from "../redis/locks.ts";
import { type DronesNamespace, droneRoom } from "../sockets/rooms.ts";
import { type ProviderQuirks, withProviderLock } from "./provider-quirks.ts";

/** A saved provider's check also probes it, as its turns call it, and remembers what it learned. */
export interface SavedProvider {
  _id: Types.ObjectId;
  /** The model checked: what the check learns of images is remembered for it. */
  modelId: string;
  params: ModelParams;
  quirks: ProviderQuirkCode[];
}

/** Quirks a drone's probe learned, with the provider's words (a peer's data: checked). */
const learnedSchema = z
  .array(z.object({ quirk: providerQuirkCodeSchema, message: z.string().max(2_000) }))
  .max(20);

/** How long a probe may take; a drone's answer may take this long on top of the `/models` check. */
const probeTimeoutMs = 20_000;

export interface ProviderCheckLimits {
  /** Checks one user may have running at once; default 2. */
  perUser: number;
  /** Checks this process runs at once for everyone; default 16. */
  perServer: number;
}

export interface ProviderCheckDependencies {
  models: Models;
  /** The providers' locks (withProviderLock). */
  locks: Locks;
  presence: PresenceStore;
  config: Pick<ResolvedConfig, "droneRequestTimeoutMs">;
  /** The drones' namespace. */
  drones: DronesNamespace;
}

export class ProviderChecks {
  private running = 0;
  private readonly runningOf = new Map<string, number>();
  private readonly limits: ProviderCheckLimits;
  private readonly sendFromServer: ModelListSender;

  constructor(
    private readonly dependencies: ProviderCheckDependencies,
    private readonly outbound: OutboundPolicy,
    private readonly quirks: ProviderQuirks,
    limits: Partial<ProviderCheckLimits> = {},
  ) {
    this.limits = { perUser: 2, perServer: 16, ...limits };
    this.sendFromServer = (url, headers) => outbound.get(new URL(url), headers, maxModelListBytes);
  }

  /**
   * Checks `options` for `userId`; `rate_limited` when they (or the server) already run as many
   * checks as allowed.
   * @example const result = await checks.check(userId, { baseUrl, apiKey, modelId });
   */
  async check(
    userId: string,
    options: ProviderCheckOptions,
    saved?: SavedProvider,
  ): Promise<ProviderCheckResult> {
    const mine = this.runningOf.get(userId) ?? 0;
    if (mine >= this.limits.perUser || this.running >= this.limits.perServer) {
      throw new UserError(
        "rate_limited",
        `At most ${this.limits.perUser} provider checks run at once; try again when one finished`,
        { details: { limit: this.limits.perUser, retryAfterSeconds: 1 } },
      );
    }
    this.running += 1;
    this.runningOf.set(userId, mine + 1);
    try {
      const probe = saved ? { params: saved.params, quirks: saved.quirks } : undefined;
      const answer = (await this.onDrone(userId, options, probe)) ?? {
        ...(await checkAndProbe(
          options,
          this.sendFromServer,
          probe && {
            ...probe,
            timeoutMs: probeTimeoutMs,
            // The probe's request obeys the same outbound policy as the model list. Its byte cap
            // is a backstop: the probe stops reading at its own limit first and says so.
            fetch: this.outbound.fetcher(2 * maxProbeAnswerBytes),
          },
        )),
        via: "server" as const,
      };
      if (saved && answer.learned.length > 0) await this.quirks.remember(saved._id, answer.learned);
      const images = answer.result.probe?.images;
      if (saved && images !== undefined) {
        const message = answer.result.probe?.imagesMessage;
        const { models, locks } = this.dependencies;
        await withProviderLock(locks, saved._id, () =>
          models.Provider.updateOne(
            { _id: saved._id },
            {
              $set: {
                images: {
                  modelId: saved.modelId,
                  accepted: images,
                  checkedAt: new Date(),
                  ...(message ? { message } : {}),
                },
              },
            },
          ),
        );
      }
      return { ...answer.result, via: answer.via };
    } finally {
      this.running -= 1;
      const left = (this.runningOf.get(userId) ?? 1) - 1;
      if (left > 0) this.runningOf.set(userId, left);
      else this.runningOf.delete(userId);
    }
  }

  /** The first online drone's answer, or null when none answered. */
  private async onDrone(
    userId: string,
    options: ProviderCheckOptions,
    probe: { params: ModelParams; quirks: ProviderQuirkCode[] } | undefined,
  ): Promise<{ result: ProviderCheckResult; learned: LearnedQuirk[]; via: "drone" } | null> {
    for (const { droneId } of await onlineDrones(this.dependencies, userId)) {
      try {
        const [answer] = (await this.dependencies.drones
          .to(droneRoom(droneId))
          .timeout(
            this.dependencies.config.droneRequestTimeoutMs + 5_000 + (probe ? probeTimeoutMs : 0),
          )
          .emitWithAck("provider_check", {
            baseUrl: options.baseUrl,
            apiKey: options.apiKey,
            ...(options.modelId ? { modelId: options.modelId } : {}),
            ...(probe ? { probe } : {}),
          })) as Array<Ack<{ result: ProviderCheckResult; learned?: unknown }>>;
        // The user's own drone, but still a peer: only a well-formed result is passed on.
        const result = answer?.ok ? providerCheckResultSchema.safeParse(answer.result) : null;
        if (result?.success) {
          const learned = answer?.ok ? learnedSchema.safeParse(answer.learned ?? []) : null;
          return {
            result: result.data,
            learned: learned?.success ? learned.data : [],
            via: "drone",
          };
        }
      } catch {
        // No answer in time: the next drone, or the server.
      }
    }
    return null;
  }
}

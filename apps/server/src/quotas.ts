// Per-user limits on what piles up (queued turns, projects, providers, registration tokens,
// webhooks): one account cannot fill the database or the queue. Past a limit the API answers 429
// naming it.
import { UserError } from "@gadget/protocol";
import type { UserQuotas } from "./config.ts";
import type { Locks } from "./redis/locks.ts";

const words: Record<keyof UserQuotas, string> = {
  queuedTurns: "queued turns",
  projects: "projects",
  providers: "providers",
  registrationTokens: "unused drone registration tokens",
  webhooks: "webhooks",
};

/**
 * Throws `quota_exceeded` (429) when a user who has `current` of `what` may not add one more.
 * @example withinQuota("projects", config.quotas.projects, await models.Project.countDocuments({ user }));
 */
export function withinQuota(what: keyof UserQuotas, limit: number, current: number): void {
  if (current >= limit) throw quotaExceeded(what, limit);
}

/** The 429 of a full quota. */
export function quotaExceeded(what: keyof UserQuotas, limit: number): UserError {
  return new UserError(
    "quota_exceeded",
    `This server allows ${limit} ${words[what]} at once; you have that many`,
    { details: { quota: what, limit } },
  );
}

/** What counting against a quota needs. */
export interface QuotaDependencies {
  locks: Locks;
  config: { quotas: UserQuotas };
}

/**
 * Counts what the user has and creates one more under a per-user lock (shared by every server),
 * so parallel requests cannot pass the quota together.
 * @example const project = await createWithinQuota(dependencies, "projects", userId, () => count(), () => create());
 */
export async function createWithinQuota<T>(
  dependencies: QuotaDependencies,
  what: keyof UserQuotas,
  userId: string,
  count: () => Promise<number>,
  create: () => Promise<T>,
): Promise<T> {
  return dependencies.locks.with(`quota:${what}:${userId}`, async () => {
    withinQuota(what, dependencies.config.quotas[what], await count());
    return create();
  });
}

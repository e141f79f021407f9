// A user's sign-ins: opaque bearer tokens stored as their SHA-256, with a sliding expiry (a token
// unused for tokenTtlDays stops working), revocation that closes the token's live sockets on every
// server at once, and housekeeping: sockets of revoked or expired tokens close within a sweep, and
// rows of expired tokens go now and then.
import type { ApiTokenDocument, Models } from "@gadget/db";
import type { Types } from "mongoose";
import { randomSecret, sha256 } from "../crypto/tokens.ts";
import { type IdeNamespace, tokenRoom } from "../sockets/rooms.ts";

/** How often a token's `lastUsedAt` is written at most (its expiry slides by this much less). */
const touchEveryHourMs = 60 * 60 * 1000;

/** Sign-ins one user keeps at most (every login is one). */
export const maxSignInsPerUser = 100;

const lastUse = (row: Pick<ApiTokenDocument, "createdAt" | "lastUsedAt">) =>
  (row.lastUsedAt ?? row.createdAt).getTime();

export interface SignIn {
  /** The token's hash: shown, and revoked by; it cannot be turned back into the token. */
  id: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date;
  current: boolean;
  device: string | null;
}

/** How often this server closes sockets whose token is gone, and removes expired rows. */
const closeStaleEveryMs = 30_000;
const pruneEveryMs = 60 * 60_000;

export class SignIns {
  private timers: NodeJS.Timeout[] = [];
  /** When this process last wrote each token's lastUsedAt. */
  private readonly touched = new Map<string, number>();
  /** Hourly, or a tenth of the lifetime when that is shorter. */
  private readonly touchEveryMs: number;

  constructor(
    private readonly models: Models,
    private readonly ttlMs: number,
    private readonly ide: IdeNamespace,
  ) {
    this.touchEveryMs = Math.min(touchEveryHourMs, ttlMs / 10);
  }

  /** Starts the housekeeping on this server (a revocation from this server closes sockets at once). */
  start(): void {
    this.timers = [
      setInterval(() => void this.closeStale().catch(() => undefined), closeStaleEveryMs),
      setInterval(() => void this.prune().catch(() => undefined), pruneEveryMs),
    ];
    for (const timer of this.timers) timer.unref();
  }

  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
  }

  /** A new token for `userId`, made with `device` (in words); only its hash is stored. */
  async issue(userId: Types.ObjectId | string, device: string | null = null): Promise<string> {
    const token = randomSecret("gat");
    const tokenHash = sha256(token);
    const now = new Date();
    await this.models.ApiToken.create({
      _id: tokenHash,
      user: userId,
      tokenHash,
      createdAt: now,
      lastUsedAt: now,
      device,
    });
    // One row per login: past the cap, the least recently used sign-ins end.
    const rows = await this.models.ApiToken.find({ user: userId })
      .select({ createdAt: 1, lastUsedAt: 1 })
      .lean<ApiTokenDocument[]>();
    if (rows.length > maxSignInsPerUser) {
      const oldest = rows
        .sort((a, b) => lastUse(a) - lastUse(b))
        .slice(0, rows.length - maxSignInsPerUser)
        .map((row) => row._id);
      await this.models.ApiToken.deleteMany({ _id: { $in: oldest } });
      this.disconnect(oldest);
    }
    return token;
  }

  /** The user of a token that has not expired, or null; renews its expiry (at most hourly). */
  async authenticate(token: string): Promise<{ userId: string; tokenHash: string } | null> {
    if (token.length > 200) return null;
    const tokenHash = sha256(token);
    const found = await this.models.ApiToken.findById(tokenHash)
      .select({ user: 1, createdAt: 1, lastUsedAt: 1 })
      .lean<ApiTokenDocument>();
    if (!found) return null;
    const lastUsed = (found.lastUsedAt ?? found.createdAt).getTime();
    const now = Date.now();
    if (now - lastUsed > this.ttlMs) {
      await this.models.ApiToken.deleteOne({ _id: tokenHash });
      return null;
    }
    const every = this.touchEveryMs;
    if (now - lastUsed > every && now - (this.touched.get(tokenHash) ?? 0) > every) {
      this.touched.set(tokenHash, now);
      if (this.touched.size > 10_000) this.touched.clear();
      await this.models.ApiToken.updateOne(
        { _id: tokenHash },
        { $set: { lastUsedAt: new Date(now) } },
      );
    }
    return { userId: String(found.user), tokenHash };
  }

  /** The user's sign-ins, newest first; `current` marks the one asking. */
  async list(userId: string, currentHash: string | null): Promise<SignIn[]> {
    const rows = await this.models.ApiToken.find({ user: userId })
      .select({ createdAt: 1, lastUsedAt: 1, device: 1 })
      .lean<ApiTokenDocument[]>();
    return rows
      .map((row) => {
        const lastUsed = row.lastUsedAt ?? row.createdAt;
        return {
          id: row._id,
          createdAt: row.createdAt,
          lastUsedAt: row.lastUsedAt ?? null,
          expiresAt: new Date(lastUsed.getTime() + this.ttlMs),
          current: row._id === currentHash,
          device: row.device ?? null,
        };
      })
      .filter((signIn) => signIn.expiresAt.getTime() > Date.now())
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  }

  /** Revokes one of the user's sign-ins and closes its sockets; false if it is not theirs. */
  async revoke(userId: string, tokenHash: string): Promise<boolean> {
    const { deletedCount } = await this.models.ApiToken.deleteOne({ _id: tokenHash, user: userId });
    // Only the owner's own sign-in: someone else's id closes nothing.
    if (deletedCount > 0) this.disconnect([tokenHash]);
    return deletedCount > 0;
  }

  /** Revokes every sign-in of the user (password reset); answers how many. */
  async revokeAll(userId: string): Promise<number> {
    const rows = await this.models.ApiToken.find({ user: userId }).select({ _id: 1 }).lean();
    const { deletedCount } = await this.models.ApiToken.deleteMany({ user: userId });
    this.disconnect(rows.map((row) => String(row._id)));
    return deletedCount;
  }

  /** Closes the /ide sockets of these tokens, on every server (through the adapter). */
  disconnect(tokenHashes: readonly string[]): void {
    if (tokenHashes.length === 0) return;
    this.ide.in(tokenHashes.map(tokenRoom)).disconnectSockets(true);
  }

  /**
   * Closes this server's /ide sockets whose token is gone (revoked from the CLI, expired):
   * called periodically, so no socket outlives its token by more than a sweep.
   */
  async closeStale(): Promise<number> {
    const sockets = [...this.ide.sockets.values()];
    const hashes = [...new Set(sockets.map((socket) => socket.data.tokenHash).filter(Boolean))];
    if (hashes.length === 0) return 0;
    const live = await this.models.ApiToken.find({ _id: { $in: hashes } })
      .select({ createdAt: 1, lastUsedAt: 1 })
      .lean<ApiTokenDocument[]>();
    const now = Date.now();
    const valid = new Set(
      live
        .filter((row) => now - (row.lastUsedAt ?? row.createdAt).getTime() <= this.ttlMs)
        .map((row) => row._id),
    );
    let closed = 0;
    for (const socket of sockets) {
      if (!valid.has(socket.data.tokenHash)) {
        socket.disconnect(true);
        closed++;
      }
    }
    return closed;
  }

  /** Deletes the rows of expired tokens; answers how many. */
  async prune(): Promise<number> {
    const cutoff = new Date(Date.now() - this.ttlMs);
    const { deletedCount } = await this.models.ApiToken.deleteMany({
      $or: [{ lastUsedAt: { $lt: cutoff } }, { lastUsedAt: null, createdAt: { $lt: cutoff } }],
    });
    return deletedCount;
  }
}

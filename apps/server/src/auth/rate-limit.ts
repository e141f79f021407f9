// Rate limits in Redis, shared by every server process. Keys are built only from validated input
// and hashed (a 10 MiB "email" never becomes a 10 MiB key); counting and expiry are one script.
import { UserError } from "@gadget/protocol";
import { sha256 } from "../crypto/tokens.ts";
import type { RedisClient } from "../redis/connections.ts";
import { luaScript } from "../redis/script.ts";

// INCR and the window's expiry in one step: a key is never left without one.
const countScript = `
local count = redis.call("incr", KEYS[1])
if count == 1 then redis.call("pexpire", KEYS[1], ARGV[1]) end
local ttl = redis.call("pttl", KEYS[1])
if ttl < 0 then redis.call("pexpire", KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}`;

// Failed logins of one (email, address): how many, and when the last one was.
const failScript = `
local count = redis.call("hincrby", KEYS[1], "count", 1)
redis.call("hset", KEYS[1], "last", ARGV[1])
redis.call("pexpire", KEYS[1], ARGV[2])
return count`;

function tooMany(retryAfterSeconds: number, what: string): UserError {
  return new UserError("rate_limited", `${what}; try again in ${retryAfterSeconds} s`, {
    details: { retryAfterSeconds },
  });
}

export class RateLimits {
  private readonly scripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.scripts = {
      count: luaScript(redis, "gadgetRateCount", countScript),
      fail: luaScript(redis, "gadgetLoginFail", failScript),
    };
  }

  private key(kind: string, parts: string[]): string {
    return `${this.prefix}:rl:${kind}:${sha256(parts.join("\u0000"))}`;
  }

  /**
   * Counts one attempt of `kind` by `parts` (e.g. an address); throws `rate_limited` past `max`
   * in `windowMs`.
   * @example await limits.count("login-ip", [request.ip], 50, 60_000);
   */
  async count(kind: string, parts: string[], max: number, windowMs: number): Promise<void> {
    const [count, ttl] = (await this.scripts.count([this.key(kind, parts)], String(windowMs))) as [
      number,
      number,
    ];
    if (count > max) {
      throw tooMany(Math.max(1, Math.ceil(ttl / 1000)), "Too many attempts");
    }
  }

  /**
   * Refuses a login for (email, address) while its failures ask it to wait: the first `free`
   * failures cost nothing, then each doubles the wait (1 s, 2 s, 4 s … up to `maxDelayMs`).
   * Failures from other addresses never slow the owner at their own.
   */
  async checkLogin(email: string, address: string, free = 5, maxDelayMs = 15 * 60_000) {
    const [count, last] = await this.redis.hmget(
      this.key("login-fail", [email, address]),
      "count",
      "last",
    );
    const failures = Number(count ?? 0);
    if (failures < free) return;
    const delay = Math.min(maxDelayMs, 1000 * 2 ** (failures - free));
    const wait = Number(last ?? 0) + delay - Date.now();
    if (wait > 0) {
      throw tooMany(Math.ceil(wait / 1000), "Too many wrong passwords for this account from here");
    }
  }

  /** Records a failed login of (email, address). */
  async loginFailed(email: string, address: string): Promise<void> {
    await this.scripts.fail(
      [this.key("login-fail", [email, address])],
      String(Date.now()),
      String(24 * 60 * 60_000),
    );
  }

  /** A successful login clears the (email, address)'s failures. */
  async loginSucceeded(email: string, address: string): Promise<void> {
    await this.redis.del(this.key("login-fail", [email, address]));
  }
}

// Password hashing with Node's scrypt (slow, memory-hard, no native dependency) and a random salt.
// The default cost is OWASP's recommendation (N=2^17, r=8, p=1: 128 MiB and a few hundred ms per
// hash), so hashes run a few at a time; a hash of a lower cost is replaced at the next login.
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import { SystemError } from "@gadget/protocol";

const keyLength = 64;

export interface PasswordCost {
  N: number;
  r: number;
  p: number;
}

/** OWASP's password storage cheat sheet: scrypt N=2^17, r=8, p=1. */
export const defaultPasswordCost: PasswordCost = { N: 2 ** 17, r: 8, p: 1 };

/** Hashes at once at most; each takes 128 N r bytes of memory. */
const maxConcurrent = 2;
/** Hashes waiting for a slot at most: past it a login is answered "busy" instead of queued. */
const maxWaiting = 64;
let running = 0;
const waiting: Array<() => void> = [];

async function withSlot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= maxConcurrent) {
    if (waiting.length >= maxWaiting) {
      throw new SystemError(
        "unavailable",
        "The server is busy checking passwords; try again in a few seconds",
      );
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
  running++;
  try {
    return await work();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

function derive(password: string, salt: Buffer, cost: PasswordCost): Promise<Buffer> {
  return withSlot(
    () =>
      new Promise((resolve, reject) => {
        const maxmem = 128 * cost.N * cost.r * 2;
        scrypt(password, salt, keyLength, { ...cost, maxmem }, (error, key) =>
          error ? reject(error) : resolve(key),
        );
      }),
  );
}

/** Hashes a password into `scrypt$N$r$p$salt$hash` (base64url parts). */
export async function hashPassword(
  password: string,
  cost: PasswordCost = defaultPasswordCost,
): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost);
  const { N, r, p } = cost;
  return `scrypt$${N}$${r}$${p}$${salt.toString("base64url")}$${key.toString("base64url")}`;
}

/** The cost a stored hash was made with, or null if it is not one of ours. */
export function costOf(stored: string): PasswordCost | null {
  const [scheme, N, r, p] = stored.split("$");
  if (scheme !== "scrypt" || !N || !r || !p) return null;
  return { N: Number(N), r: Number(r), p: Number(p) };
}

/** Whether a stored hash is weaker than `cost` (to be replaced at the next login). */
export function needsRehash(stored: string, cost: PasswordCost = defaultPasswordCost): boolean {
  const current = costOf(stored);
  return !current || current.N < cost.N || current.r < cost.r || current.p < cost.p;
}

/** Compares in constant time; false for any malformed stored hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [, , , , salt, hash] = stored.split("$");
  const cost = costOf(stored);
  if (!cost || !salt || !hash || cost.N > 2 ** 20 || cost.r > 32 || cost.p > 4) return false;
  const expected = Buffer.from(hash, "base64url");
  const actual = await derive(password, Buffer.from(salt, "base64url"), cost);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Hashes of a random password per cost, compared against when the email is unknown (timing). */
const dummies = new Map<number, Promise<string>>();

/** A hash of the same cost as real ones, for unknown emails. */
export function dummyPasswordHash(cost: PasswordCost = defaultPasswordCost): Promise<string> {
  let dummy = dummies.get(cost.N);
  if (!dummy) {
    dummy = hashPassword(randomBytes(16).toString("hex"), cost);
    dummies.set(cost.N, dummy);
  }
  return dummy;
}

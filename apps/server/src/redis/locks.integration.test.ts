// Locks hold across processes: two Locks on separate Redis connections (as two servers) never run
// the same key's work at once, so an unisolated read-modify-write stays correct.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useRedisClients } from "../testing/use-redis.ts";
import { Locks } from "./locks.ts";

const client = useRedisClients();

describe("Locks", () => {
  it("serialises a read-modify-write across two 'servers'", async () => {
    const prefix = `t_locks_${randomUUID().slice(0, 8)}`;
    const first = new Locks(client(), prefix);
    const second = new Locks(client(), prefix);
    const counter = client();
    const key = `${prefix}:counter`;
    await counter.set(key, "0");
    const increment = (locks: Locks) =>
      locks.with("counter", async () => {
        const value = Number(await counter.get(key));
        await new Promise((resolve) => setTimeout(resolve, 2));
        await counter.set(key, String(value + 1));
      });
    await Promise.all(
      Array.from({ length: 20 }, (_, index) => increment(index % 2 ? first : second)),
    );
    expect(await counter.get(key)).toBe("20");
  });

  it("releases the lock when the work throws", async () => {
    const locks = new Locks(client(), `t_locks_${randomUUID().slice(0, 8)}`);
    await expect(locks.with("k", async () => Promise.reject(new Error("boom")))).rejects.toThrow(
      "boom",
    );
    await expect(locks.with("k", async () => "next", { waitMs: 500 })).resolves.toBe("next");
  });
});

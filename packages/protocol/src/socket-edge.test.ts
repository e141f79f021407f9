// The shared ack edge: what a peer is answered for a good payload, a bad one and a failing handler.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { SystemError, UserError } from "./errors.ts";
import type { Ack } from "./socket.ts";
import { ackHandler } from "./socket-edge.ts";

const schema = z.object({ turnId: z.string().min(1) });

function recorder() {
  const logged: string[] = [];
  return {
    logged,
    logger: { error: (_object: object, message?: string) => logged.push(message ?? "") },
  };
}

function answer<R extends object>(
  handler: (payload: unknown, ack?: (result: Ack<R>) => void) => void,
  payload: unknown,
): Promise<Ack<R>> {
  return new Promise((resolve) => handler(payload, resolve));
}

describe("ackHandler", () => {
  it("answers ok with the handler's result for a valid payload", async () => {
    const { logger } = recorder();
    const handler = ackHandler(logger, schema, "cancel", async ({ turnId }) => ({ turnId }));
    expect(await answer(handler, { turnId: "t1" })).toEqual({ ok: true, turnId: "t1" });
  });

  it("answers validation_failed naming the field, without running the handler", async () => {
    const { logger, logged } = recorder();
    let ran = false;
    const handler = ackHandler(logger, schema, "cancel", async () => {
      ran = true;
      return {};
    });
    const result = await answer(handler, { turnId: "" });
    expect(result).toMatchObject({ ok: false, error: { code: "validation_failed" } });
    expect(!result.ok && result.error.message).toContain("turnId");
    expect(ran).toBe(false);
    expect(logged).toEqual([]);
  });

  it("answers a thrown GadgetError with its code and message", async () => {
    const { logger } = recorder();
    const handler = ackHandler(logger, schema, "cancel", async () => {
      throw new UserError("not_found", "This drone is not running that turn");
    });
    expect(await answer(handler, { turnId: "t1" })).toEqual({
      ok: false,
      error: { code: "not_found", message: "This drone is not running that turn" },
    });
  });

  it("hides an unexpected error behind `internal` and logs it; an outage is answered, not logged", async () => {
    const { logger, logged } = recorder();
    const codes: string[] = [];
    const crash = ackHandler(
      logger,
      schema,
      "cancel",
      async () => {
        throw new Error("secret path /home/me");
      },
      { onError: (code) => codes.push(code) },
    );
    const result = await answer(crash, { turnId: "t1" });
    expect(result).toEqual({ ok: false, error: { code: "internal", message: "Internal error" } });
    expect(logged).toEqual(["cancel failed"]);

    const outage = ackHandler(logger, schema, "heartbeat", async () => {
      throw new SystemError("unavailable", "The database is unavailable");
    });
    expect(await answer(outage, { turnId: "t1" })).toMatchObject({
      ok: false,
      error: { code: "unavailable" },
    });
    expect(logged).toEqual(["cancel failed"]);
    expect(codes).toEqual(["internal"]);
  });

  it("maps thrown values with answerFor", async () => {
    const { logger } = recorder();
    const handler = ackHandler(
      logger,
      schema,
      "cancel",
      async () => {
        throw new Error("connection lost");
      },
      { answerFor: () => new SystemError("unavailable", "Redis is unavailable") },
    );
    expect(await answer(handler, { turnId: "t1" })).toMatchObject({
      error: { code: "unavailable", message: "Redis is unavailable" },
    });
  });

  it("still runs the handler for a peer that asked for no answer, and does not throw", async () => {
    const { logger } = recorder();
    let cancelled: (turnId: string) => void = () => undefined;
    const ran = new Promise<string>((resolve) => {
      cancelled = resolve;
    });
    const handler = ackHandler(logger, schema, "cancel", async ({ turnId }) => {
      cancelled(turnId);
      throw new Error("after the work");
    });
    expect(() => handler({ turnId: "t1" })).not.toThrow();
    expect(() => handler({ turnId: "t2" }, "not a function" as never)).not.toThrow();
    expect(await ran).toBe("t1");
  });
});

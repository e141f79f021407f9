import { describe, expect, it } from "vitest";
import {
  activityCursor,
  agentEventSchema,
  createTurnBodySchema,
  createWebhookBodySchema,
  fieldIssues,
  PROTOCOL_VERSION,
  parseActivityCursor,
  parseOrThrow,
  splitThinking,
  subscribeSchema,
  turnEventBatchSchema,
  turnEventSchema,
  turnListQuerySchema,
  UserError,
  withThinking,
  workOrderSchema,
} from "./index.ts";

const turnId = "65f1a2b3c4d5e6f7a8b9c0d1";

function validWorkOrder() {
  return {
    turnId,
    project: {
      _id: "65f1a2b3c4d5e6f7a8b9c0d2",
      name: "Demo",
      slug: "demo",
      gitUrl: "/tmp/demo.git",
    },
    session: { name: "Fix the bug", mode: "agent" },
    provider: {
      baseUrl: "http://127.0.0.1:9999/v1",
      apiKey: "sk-test",
      modelId: "test-model",
      params: { temperature: 0.2, topP: 0.9, topK: 40 },
    },
    context: [{ createdAt: "2026-11-21T10:00:00.000Z", role: "user", content: "hi" }],
    prompt: "Make the tests pass",
  };
}

function pathsOf(
  schema: { safeParse(data: unknown): { success: boolean; error?: unknown } },
  data: unknown,
) {
  const result = schema.safeParse(data);
  expect(result.success).toBe(false);
  return fieldIssues(result.error as Parameters<typeof fieldIssues>[0]).map((issue) => issue.path);
}

describe("IWorkOrder", () => {
  it("accepts a work order and fills its defaults", () => {
    const order = workOrderSchema.parse(validWorkOrder());
    expect(order.limits).toEqual({});
    expect(order.nextSeq).toBe(1);
    expect(order.session.approval).toBe("auto");
    expect(order.context[0]?.createdAt).toBeInstanceOf(Date);
  });

  it("rejects a malformed work order with the path of each bad field", () => {
    const order = validWorkOrder() as Record<string, unknown>;
    order.turnId = "not-an-id";
    (order.project as Record<string, unknown>).gitUrl = "";
    (order.provider as Record<string, unknown>).baseUrl = "nope";
    (order.context as Array<Record<string, unknown>>)[0]!.role = "wizard";
    delete order.prompt;
    expect(pathsOf(workOrderSchema, order).sort()).toEqual(
      ["context.0.role", "project.gitUrl", "prompt", "provider.baseUrl", "turnId"].sort(),
    );
  });

  it("rejects an unknown mode and negative limits", () => {
    const order = { ...validWorkOrder(), limits: { maxPasses: -1 } };
    order.session.mode = "chaos";
    expect(pathsOf(workOrderSchema, order).sort()).toEqual(["limits.maxPasses", "session.mode"]);
  });

  it("parseOrThrow raises a UserError that names the field", () => {
    const bad = { ...validWorkOrder(), prompt: "" };
    expect(() => parseOrThrow(workOrderSchema, bad, "work order")).toThrowError(UserError);
    try {
      parseOrThrow(workOrderSchema, bad, "work order");
    } catch (error) {
      expect((error as UserError).code).toBe("validation_failed");
      expect((error as UserError).message).toContain("prompt");
      expect((error as UserError).toJSON().error.details).toEqual([
        { path: "prompt", message: expect.any(String) },
      ]);
    }
  });
});

describe("turn events", () => {
  it("accepts each type with its own data", () => {
    const event = turnEventSchema.parse({
      seq: 3,
      at: "2026-11-21T10:00:00.000Z",
      type: "tool_start",
      data: { callId: "c1", tool: "read_file", params: { path: "a.ts" } },
    });
    expect(event.type).toBe("tool_start");
    expect(event.at).toBeInstanceOf(Date);
  });

  it("rejects data that does not match the type's schema, with the path", () => {
    const paths = pathsOf(agentEventSchema, {
      type: "tool_result",
      data: { callId: "c1", tool: "x", ok: "yes" },
    });
    expect(paths).toContain("data.ok");
    expect(paths).toContain("data.summary");
  });

  it("rejects an unknown type and a zero seq", () => {
    expect(agentEventSchema.safeParse({ type: "explode", data: {} }).success).toBe(false);
    const paths = pathsOf(turnEventSchema, {
      seq: 0,
      at: new Date(),
      type: "token",
      data: { text: "x" },
    });
    expect(paths).toContain("seq");
  });

  it("validates a drone's batch, event by event", () => {
    const paths = pathsOf(turnEventBatchSchema, {
      turnId,
      events: [
        { seq: 1, type: "token", data: { text: "a" } },
        { seq: 2, type: "done", data: { reason: "exploded", passes: 1, totalCost: 0 } },
      ],
    });
    expect(paths).toEqual(["events.1.data.reason"]);
  });
});

describe("REST and socket payloads", () => {
  it("rejects an empty prompt and a negative budget", () => {
    expect(
      pathsOf(createTurnBodySchema, {
        prompt: "  ",
        providerId: "p",
        limits: { costBudget: -2 },
      }).sort(),
    ).toEqual(["limits.costBudget", "prompt"]);
  });

  it("subscribe needs exactly one of turnId or sessionId", () => {
    expect(subscribeSchema.safeParse({ turnId }).success).toBe(true);
    expect(subscribeSchema.safeParse({}).success).toBe(false);
    expect(subscribeSchema.safeParse({ turnId, sessionId: turnId }).success).toBe(false);
    expect(subscribeSchema.safeParse({ activity: true }).success).toBe(true);
    expect(subscribeSchema.safeParse({ activity: true, turnId }).success).toBe(false);
    expect(subscribeSchema.safeParse({ activity: false }).success).toBe(false);
  });

  it("reads the activity list's filters and cursor, and refuses unknown statuses", () => {
    const parsed = turnListQuerySchema.parse({
      status: "processing, awaiting_approval",
      project: turnId,
      limit: "20",
    });
    expect(parsed).toEqual({
      status: ["processing", "awaiting_approval"],
      project: turnId,
      limit: 20,
    });
    expect(pathsOf(turnListQuerySchema, { status: "running" })).toEqual(["status.0"]);
    expect(pathsOf(turnListQuerySchema, { status: "" })).toEqual(["status.0"]);
    expect(pathsOf(turnListQuerySchema, { cursor: "yesterday", limit: 0 }).sort()).toEqual([
      "cursor",
      "limit",
    ]);
    const cursor = activityCursor({ createdAt: new Date(1_700_000_000_123), _id: turnId });
    expect(turnListQuerySchema.parse({ cursor }).cursor).toBe(cursor);
    expect(parseActivityCursor(cursor)).toEqual({
      createdAt: new Date(1_700_000_000_123),
      id: turnId,
    });
  });

  it("takes a webhook of http(s) URL and known events, each named once", () => {
    const valid = { url: "https://hooks.example.com/gadget", events: ["turn.completed"] };
    expect(createWebhookBodySchema.safeParse(valid).success).toBe(true);
    expect(pathsOf(createWebhookBodySchema, { ...valid, url: "ftp://example.com/" })).toEqual([
      "url",
    ]);
    expect(pathsOf(createWebhookBodySchema, { ...valid, url: "https://a:b@example.com/" })).toEqual(
      ["url"],
    );
    expect(pathsOf(createWebhookBodySchema, { ...valid, events: [] })).toEqual(["events"]);
    expect(pathsOf(createWebhookBodySchema, { ...valid, events: ["turn.started"] })).toEqual([
      "events.0",
    ]);
    expect(
      pathsOf(createWebhookBodySchema, { ...valid, events: ["turn.failed", "turn.failed"] }),
    ).toEqual(["events"]);
  });

  it("has a protocol version", () => {
    expect(PROTOCOL_VERSION).toBeGreaterThan(0);
  });
});

describe("thinking format of the session history", () => {
  it("round-trips reasoning and answer", () => {
    const stored = withThinking("I need to look at the tests.", "I found the bug!");
    expect(stored).toBe("<thinking>I need to look at the tests.</thinking>\nI found the bug!");
    expect(splitThinking(stored)).toEqual({
      thinking: "I need to look at the tests.",
      content: "I found the bug!",
    });
    expect(splitThinking("plain")).toEqual({ thinking: "", content: "plain" });
    expect(withThinking("", "plain")).toBe("plain");
  });
});

// @gadget/protocol: everything that crosses a process boundary, as zod schemas and inferred types.
export * from "./activity.ts";
export * from "./api.ts";
export * from "./chat.ts";
export * from "./common.ts";
export * from "./delivery.ts";
export * from "./errors.ts";
export * from "./events.ts";
export * from "./labels.ts";
export * from "./manage.ts";
export * from "./mcp.ts";
export * from "./session-branch.ts";
export * from "./socket.ts";
export * from "./storable.ts";
export * from "./turn.ts";
export * from "./version.ts";
export * from "./webhooks.ts";
export * from "./work-order.ts";

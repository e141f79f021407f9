// Chat messages: the session history (docs/architecture.md, "Words"), and the richer messages of one turn's loop.
import { z } from "zod";
import { dateSchema } from "./common.ts";

export const chatRoleSchema = z.enum(["system", "user", "assistant", "tool"]);
export type ChatRole = z.infer<typeof chatRoleSchema>;

/**
 * A message of the session history, as the work order carries it. An assistant's
 * reasoning is kept in `content` as a `<thinking>…</thinking>` prefix.
 */
export const chatMessageSchema = z.object({
  createdAt: dateSchema,
  role: chatRoleSchema,
  content: z.string(),
});
export type IChatMessage = z.infer<typeof chatMessageSchema>;

export const toolCallSchema = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  /** The raw JSON text the model produced; it may be malformed and is parsed by the engine. */
  arguments: z.string(),
  /**
   * Opaque fields the provider put on the call (Gemini's `extra_content` thought signature),
   * sent back as received on the next request: some providers refuse the request without them.
   */
  providerFields: z.record(z.string(), z.unknown()).optional(),
});
export type ToolCall = z.infer<typeof toolCallSchema>;

/**
 * A message of one turn's loop. It extends IChatMessage with what a resumed turn needs to
 * replay the conversation to a provider: the assistant's tool calls and each tool result's call id.
 */
export const turnMessageSchema = chatMessageSchema.extend({
  toolCalls: z.array(toolCallSchema).optional(),
  toolCallId: z.string().optional(),
  /** The tool's name on a tool message. */
  name: z.string().optional(),
  /**
   * Opaque fields the provider put on an assistant message (OpenRouter's `reasoning_details`),
   * sent back as received on the next request so the model can pick up its own reasoning.
   */
  providerFields: z.record(z.string(), z.unknown()).optional(),
});
export type ITurnMessage = z.infer<typeof turnMessageSchema>;

const thinkingPrefix = /^<thinking>([\s\S]*?)<\/thinking>\n?/;

/** Joins reasoning and answer into the history's stored form. */
export function withThinking(thinking: string, content: string): string {
  return thinking ? `<thinking>${thinking}</thinking>\n${content}` : content;
}

/** Splits the history's stored form back into reasoning and answer. */
export function splitThinking(content: string): { thinking: string; content: string } {
  const match = thinkingPrefix.exec(content);
  if (!match) return { thinking: "", content };
  return { thinking: match[1] ?? "", content: content.slice(match[0].length) };
}

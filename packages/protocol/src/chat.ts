// Chat messages: the session history of seed 001, and the richer messages of one turn's loop.
import { z } from "zod";
import { dateSchema } from "./common.ts";

export const chatRoleSchema = z.enum(["system", "user", "assistant", "tool"]);
export type ChatRole = z.infer<typeof chatRoleSchema>;

/**
 * A message of the session history, exactly as seed 001 defines it. An assistant's
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
});
export type ITurnMessage = z.infer<typeof turnMessageSchema>;

const thinkingPrefix = /^<thinking>([\s\S]*?)<\/thinking>\n?/;

/** Joins reasoning and answer into seed 001's stored form. */
export function withThinking(thinking: string, content: string): string {
  return thinking ? `<thinking>${thinking}</thinking>\n${content}` : content;
}

/** Splits seed 001's stored form back into reasoning and answer. */
export function splitThinking(content: string): { thinking: string; content: string } {
  const match = thinkingPrefix.exec(content);
  if (!match) return { thinking: "", content };
  return { thinking: match[1] ?? "", content: content.slice(match[0].length) };
}

// The step boundary of steering: the inbox's waiting messages join the turn's conversation as
// user messages, each with its `user_message` event (the inbox itself is steering.ts).
import { type AgentEvent, agentEvent } from "@gadget/protocol";
import type { TurnContext } from "./turn-context.ts";

/** Puts the inbox's waiting messages into the conversation; answers how many. */
export function* takeSteering(turn: TurnContext): Generator<AgentEvent, number> {
  const messages = turn.options.steering?.take() ?? [];
  for (const message of messages) {
    turn.state.messages.push({ role: "user", content: message.text, createdAt: turn.now() });
    yield agentEvent("user_message", { messageId: message.id, text: message.text });
  }
  return messages.length;
}

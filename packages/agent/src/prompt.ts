// Building what the model sees: the system prompt per mode, the session history, this turn's
// messages, and the current-state block appended for one call only.
import {
  type IChatMessage,
  type ITurnMessage,
  type ProviderQuirkCode,
  splitThinking,
  type TurnLimits,
  type TurnMode,
} from "@gadget/protocol";
import type { ChatMessageParam, ChatTool } from "./chat-model.ts";
import { toolImagesMessage, withImageParts } from "./images.ts";
import { formatDocument } from "./living-document.ts";
import type { TurnState } from "./state.ts";
import { clip } from "./text.ts";
import { type AnyTool, toolJsonSchema } from "./tool.ts";
import { ShortToolCallIds } from "./tool-call-ids.ts";
import type { TurnContext } from "./turn-context.ts";
import { tokensUsed } from "./usage.ts";

const roleByMode: Record<TurnMode, string> = {
  agent:
    "Carry out the user's request end to end: investigate the code, make the changes, run the project's checks, and report what you did.",
  ask: "Answer the user's question about the project. You can only read: explain, and point to the files and lines that matter. Do not claim to have changed anything.",
  tester:
    "You are the tester. Write or improve automated tests for the behaviour the user names, run them, and report the results. Change production code only when a test exposes a bug, and say so plainly.",
  docser:
    "You are the documentation writer. Write or update documentation (README, docs/, comments, docstrings) so it matches what the code really does. Do not change behaviour; read the code to check every claim.",
};

/** The system prompt: who the agent is, where it works, its tools and its rules. */
export function buildSystemPrompt(options: {
  mode: TurnMode;
  workspace: string;
  tools: AnyTool[];
  approvalOnWrite: boolean;
  /** The project's skills, by name and description only (load_skill reads one). */
  skills?: ReadonlyArray<{ name: string; description: string }>;
}): string {
  const { tools } = options;
  const toolLines = tools.length
    ? tools
        .map((tool) => `- ${tool.name} (${tool.permission}): ${firstSentence(tool.description)}`)
        .join("\n")
    : "- (none: answer from what you know and the context given)";
  const rules = [
    "Paths are relative to the workspace root; never leave it.",
    "Look before you change: read the relevant code first, then make small, targeted edits.",
    "Call several independent tools in one response: read tools run in parallel, write tools run in order.",
    "Never repeat a call with the same arguments unless something changed since; its result is already above. Repeating calls ends the turn.",
    "When the work is done, answer without calling tools: what you found or changed, which files, and anything left to do.",
  ];
  if (tools.some((tool) => tool.name === "update_document"))
    rules.push(
      "Keep working notes (plan, findings, progress) in the living document with update_document.",
    );
  if (options.approvalOnWrite)
    rules.push(
      `Write tools wait for the user's approval. A declined call returns "declined by the user": adapt your plan instead of retrying it.`,
    );
  const skills = options.skills ?? [];
  const skillLines = skills.length
    ? [
        `## Skills\nThe project's instructions for kinds of task. When one fits the work, read it with load_skill before starting, then follow it.\n${skills.map((skill) => `- ${skill.name}: ${skill.description}`).join("\n")}`,
      ]
    : [];
  return [
    "You are Gadget, the programming agent of Gadget Code.",
    roleByMode[options.mode],
    `## Workspace\n${options.workspace}`,
    `## Tools\n${toolLines}`,
    ...skillLines,
    `## Rules\n${rules.map((rule) => `- ${rule}`).join("\n")}`,
  ].join("\n\n");
}

function firstSentence(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  const end = line.search(/\.(\s|$)/);
  return end >= 0 ? line.slice(0, end + 1) : line;
}

/** The `tools` parameter of a request. */
export function toolDefinitions(tools: AnyTool[]): ChatTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: toolJsonSchema(tool) },
  }));
}

function formatLimit(
  value: number,
  limit: number | undefined,
  format: (n: number) => string = String,
) {
  if (limit === undefined) return format(value);
  const share = limit > 0 ? Math.round((value / limit) * 100) : 0;
  return `${format(value)} of ${format(limit)} (${share}%)`;
}

/**
 * The current-state block (docs/architecture.md): pass, budget used, goal and living document.
 * Only facts that change: it is new on every pass, so each character of it is sent uncached every
 * time. How to act (parallel calls, answering without tools when done) is in the system prompt.
 */
export function currentStateBlock(state: TurnState, limits: TurnLimits, pass: number): string {
  const money = (value: number) => `$${value.toFixed(4)}`;
  const used = [
    `pass ${formatLimit(pass, limits.maxPasses)}`,
    `tool calls ${formatLimit(state.toolCallCount, limits.maxToolCalls)}`,
    `tokens ${formatLimit(tokensUsed(state.tokens), limits.tokenBudget)}`,
    `cost ${formatLimit(state.totalCost, limits.costBudget, money)}`,
  ].join(" · ");
  const document = formatDocument(state.document.sections);
  return [
    `## CURRENT STATE (pass ${pass})`,
    `Budget used: ${used}`,
    `### User goal\n${clip(state.goal, 2_000)}`,
    `### Living document\n${document || "Empty: nothing recorded yet."}`,
  ].join("\n\n");
}

/** Session history as provider messages: reasoning stripped, stray tool messages made readable. */
export function historyMessages(history: IChatMessage[]): ChatMessageParam[] {
  return history.map((message): ChatMessageParam => {
    switch (message.role) {
      case "assistant":
        return { role: "assistant", content: splitThinking(message.content).content };
      case "system":
        return { role: "system", content: message.content };
      case "tool":
        // A tool message without its call cannot be replayed as one; keep its text.
        return { role: "user", content: `[tool output from an earlier turn]\n${message.content}` };
      default:
        return { role: "user", content: message.content };
    }
  });
}

const converted = new WeakMap<ITurnMessage, ChatMessageParam>();
/**
 * The reasoning of an assistant message, beside it rather than in it: sent back only to providers
 * that need it (`echo_reasoning`), and never counted in prompt estimates.
 */
const reasoningOf = new WeakMap<ChatMessageParam, string>();

/** One turn message as a provider message (cached: messages are replaced, not edited, once sent). */
export function turnMessageParam(message: ITurnMessage): ChatMessageParam {
  const cached = converted.get(message);
  if (cached) return cached;
  let param: ChatMessageParam;
  if (message.role === "tool") {
    param = { role: "tool", tool_call_id: message.toolCallId ?? "", content: message.content };
  } else if (message.role === "assistant") {
    const { thinking, content } = splitThinking(message.content);
    const calls = message.toolCalls ?? [];
    // Provider fields (reasoning_details, a call's extra_content) go back as they came.
    const assistant: ChatMessageParam = {
      ...message.providerFields,
      role: "assistant",
      content: content || (calls.length > 0 ? null : ""),
    };
    if (calls.length > 0)
      assistant.tool_calls = calls.map((call) => ({
        ...call.providerFields,
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.arguments },
      }));
    if (thinking) reasoningOf.set(assistant, thinking);
    param = assistant;
  } else if (message.role === "system") {
    param = { role: "system", content: message.content };
  } else {
    param = { role: "user", content: message.content };
  }
  converted.set(message, param);
  return param;
}

const withImages = new WeakMap<ITurnMessage, ChatMessageParam>();
/** The turn's first message (the prompt) with the prompt's images, when the model takes them. */
function promptParam(turn: TurnContext, message: ITurnMessage): ChatMessageParam {
  if (message.role !== "user" || turn.images.length === 0 || !turn.acceptsImages)
    return turnMessageParam(message);
  let param = withImages.get(message);
  if (!param) {
    param = { role: "user", content: withImageParts(message.content, turn.images) };
    withImages.set(message, param);
  }
  return param;
}

/**
 * The messages of one main-loop call: system prompt (with the pre-enriched project context),
 * session history, this turn's messages, and the current-state block (never stored). Everything
 * before the state block is the previous call's request plus what that call added, so a
 * provider's prompt cache (the longest unchanged prefix) covers all but the newest messages.
 */
export function buildPassMessages(turn: TurnContext, pass: number): ChatMessageParam[] {
  const { state } = turn;
  // The same on every pass: dropping the project context after pass 1 would change the first
  // message and leave pass 2 nothing cached.
  const system = state.preEnrichedContext
    ? `${turn.systemPrompt}\n\n${state.preEnrichedContext}`
    : turn.systemPrompt;
  const messages: ChatMessageParam[] = [{ role: "system", content: system }, ...turn.historyParams];
  let toolRun: ITurnMessage[] = [];
  state.messages.forEach((message, index) => {
    messages.push(index === 0 ? promptParam(turn, message) : turnMessageParam(message));
    if (message.role === "tool") toolRun.push(message);
    // After the last tool result of a response: the images those results returned, if any.
    if (toolRun.length > 0 && state.messages[index + 1]?.role !== "tool") {
      const shown = turn.acceptsImages ? toolImagesMessage(toolRun) : null;
      if (shown) messages.push(shown);
      toolRun = [];
    }
  });
  messages.push({
    role: turn.tunables.stateMessageRole,
    content: currentStateBlock(state, turn.limits, pass),
  });
  return messages;
}

/**
 * A request's messages as a provider with these quirks takes them: reasoning sent back as
 * `reasoning_content` on every assistant message (`echo_reasoning`, DeepSeek wants the field even
 * when empty), and tool-call ids rewritten to 9 letters or digits (`short_tool_call_ids`) in
 * both the assistant's calls and the tool messages. Messages are copied, never changed.
 */
export function adaptMessages(
  messages: ChatMessageParam[],
  quirks: ReadonlySet<ProviderQuirkCode>,
): ChatMessageParam[] {
  const echo = quirks.has("echo_reasoning") && !quirks.has("no_reasoning_echo");
  const shorten = quirks.has("short_tool_call_ids");
  if (!echo && !shorten) return messages;
  const ids = shorten ? new ShortToolCallIds(toolCallIdsOf(messages)) : undefined;
  return messages.map((message): ChatMessageParam => {
    if (message.role === "assistant") {
      const copy: ChatMessageParam & { reasoning_content?: string } = { ...message };
      if (echo) copy.reasoning_content = reasoningOf.get(message) ?? "";
      if (ids && message.tool_calls)
        copy.tool_calls = message.tool_calls.map((call) => ({ ...call, id: ids.of(call.id) }));
      return copy;
    }
    if (ids && message.role === "tool")
      return { ...message, tool_call_id: ids.of(message.tool_call_id) };
    return message;
  });
}

function* toolCallIdsOf(messages: ChatMessageParam[]): Iterable<string> {
  for (const message of messages) {
    if (message.role === "assistant") for (const call of message.tool_calls ?? []) yield call.id;
    else if (message.role === "tool") yield message.tool_call_id;
  }
}

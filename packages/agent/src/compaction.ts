// Context compaction (docs/architecture.md, "Compaction"; as Codex and opencode do it): keep the prompt inside the context window by
// pruning old tool outputs, then summarising older messages into a Goal/Discoveries/Accomplished/Files note.
import { type AgentEvent, agentEvent, type ITurnMessage, splitThinking } from "@gadget/protocol";
import { isAbortError } from "./abort.ts";
import type { ChatMessageParam } from "./chat-model.ts";
import { imageEstimateCharacters } from "./images.ts";
import { callModel } from "./model-call.ts";
import { buildPassMessages } from "./prompt.ts";
import { toolCallSignature } from "./signature.ts";
import { forgetSignatures } from "./stuck-detection.ts";
import { clip } from "./text.ts";
import { accountUsage, modelCallSettings, samplingOf, type TurnContext } from "./turn-context.ts";

/** What a pruned tool output is replaced with. */
export const prunedOutput = "[output pruned]";

/**
 * Estimated tokens of a prompt: characters / 4 plus a little per message. Rough on purpose:
 * it only decides when to compact, and the provider's context-length error catches the rest.
 */
export function estimateTokens(messages: ChatMessageParam[]): number {
  let characters = 0;
  for (const message of messages) {
    characters += 16;
    const content = message.content;
    if (typeof content === "string") characters += content.length;
    else if (Array.isArray(content))
      for (const part of content)
        characters +=
          "text" in part && typeof part.text === "string"
            ? part.text.length
            : part.type === "image_url"
              ? imageEstimateCharacters
              : 0;
    if (message.role === "assistant")
      for (const call of message.tool_calls ?? [])
        if (call.type === "function")
          characters += call.function.name.length + call.function.arguments.length + 16;
  }
  return Math.ceil(characters / 4);
}

function signatureOf(call: { name: string; arguments: string }): string {
  let parsed: unknown;
  try {
    parsed = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
  } catch {
    parsed = undefined;
  }
  return toolCallSignature(call.name, call.arguments, parsed);
}

/** Estimated tokens of the next pass's full request (messages and tool definitions). */
export function estimatePassTokens(turn: TurnContext, pass: number): number {
  return estimateTokens(buildPassMessages(turn, pass)) + turn.toolDefinitionTokens;
}

/** Whether a request's messages are above the proactive compaction threshold. */
export function overThreshold(turn: TurnContext, messages: ChatMessageParam[]): boolean {
  const window = turn.provider.contextWindow;
  if (!window) return false;
  return (
    estimateTokens(messages) + turn.toolDefinitionTokens >
    window * turn.tunables.compactionThreshold
  );
}

/** The window size a context-length error states ("maximum context length is 8192 tokens"), if any. */
export function contextWindowFromError(message: string): number | undefined {
  const match =
    /(?:maximum context length|context (?:length|window))\D{0,20}?(\d[\d,]*)\s*tokens/i.exec(
      message,
    );
  const value = match?.[1] ? Number.parseInt(match[1].replaceAll(",", ""), 10) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

/** Index of the first message of the last `keep` passes (each pass starts with an assistant message). */
function recentStart(messages: ITurnMessage[], keep: number): number {
  let seen = 0;
  for (let index = messages.length - 1; index >= 1; index -= 1) {
    if (messages[index]?.role !== "assistant") continue;
    seen += 1;
    if (seen === keep) return index;
  }
  return 1;
}

/**
 * Compacts the turn's messages. `proactive` stops as soon as the estimate is under the
 * threshold; `reactive` (the provider said the prompt is too long) always summarises and
 * aims lower, since the estimate was evidently off.
 */
export async function* compactContext(
  turn: TurnContext,
  mode: "proactive" | "reactive",
  pass: number,
): AsyncGenerator<AgentEvent, void> {
  const { state } = turn;
  const window = turn.provider.contextWindow;
  const share = turn.tunables.compactionThreshold * (mode === "reactive" ? 0.6 : 1);
  const target = window ? window * share : undefined;
  const before = estimatePassTokens(turn, pass);
  let protectFrom = recentStart(
    state.messages,
    mode === "reactive" ? 1 : turn.tunables.keepRecentPasses,
  );
  // The provider refused even a single pass: summarise that too rather than send it again.
  if (mode === "reactive" && protectFrom <= 1) protectFrom = state.messages.length;

  // Calls whose results the model will no longer see may be repeated without counting as loops.
  const forgotten = new Set<string>();
  const callsById = new Map<string, { name: string; arguments: string }>();
  for (const message of state.messages.slice(1, protectFrom))
    for (const call of message.toolCalls ?? []) callsById.set(call.id, call);
  const forget = (message: ITurnMessage) => {
    const call = message.toolCallId ? callsById.get(message.toolCallId) : undefined;
    if (call) forgotten.add(signatureOf(call));
  };

  // 1. Prune old tool outputs: the model rarely needs them verbatim once it has acted on them.
  let pruned = 0;
  for (let index = 1; index < protectFrom; index += 1) {
    const message = state.messages[index] as ITurnMessage;
    if (message.role !== "tool" || message.content === prunedOutput) continue;
    state.messages[index] = { ...message, content: prunedOutput };
    forget(message);
    pruned += 1;
  }
  const afterPrune = estimatePassTokens(turn, pass);
  let summarised = 0;
  if (mode === "reactive" || (target !== undefined && afterPrune > target)) {
    // 2. Summarise everything before the protected passes into one note.
    if (protectFrom > 1) {
      yield agentEvent("status", {
        message: "Summarising earlier work to fit the context window",
        pass,
        phase: "compaction",
        model: state.activeModel,
      });
      const older = state.messages.slice(1, protectFrom);
      for (const message of older) if (message.role === "tool") forget(message);
      const summary = yield* summarise(turn, older);
      const first = state.messages[0] as ITurnMessage;
      state.summary = summary;
      state.messages = [
        {
          role: "user",
          content: `${state.goal}\n\n<summary-of-earlier-work>\n${summary}\n</summary-of-earlier-work>`,
          createdAt: first.createdAt,
        },
        ...state.messages.slice(protectFrom),
      ];
      summarised = older.length;
    }
    // 3. Still too big: the recent outputs themselves are huge, or the history is.
    if (target !== undefined) shrinkRecent(turn, pass, target);
  }
  forgetSignatures(state, forgotten);
  state.compactions += 1;
  const after = estimatePassTokens(turn, pass);
  turn.logger.info({ mode, before, after, pruned, summarised }, "context compacted");
  yield agentEvent("debug", {
    message: `Context compacted (${mode}): about ${before} → ${after} tokens`,
    details: { mode, before, after, pruned, summarised, contextWindow: window },
  });
}

function shrinkRecent(turn: TurnContext, pass: number, target: number): void {
  const { state } = turn;
  for (let round = 0; round < 8 && estimatePassTokens(turn, pass) > target; round += 1) {
    let largest = -1;
    for (let index = 1; index < state.messages.length; index += 1) {
      const message = state.messages[index] as ITurnMessage;
      if (message.role !== "tool" || message.content.length <= 2_000) continue;
      if (
        largest < 0 ||
        message.content.length > (state.messages[largest] as ITurnMessage).content.length
      )
        largest = index;
    }
    if (largest < 0) break;
    const message = state.messages[largest] as ITurnMessage;
    state.messages[largest] = {
      ...message,
      content: clip(message.content, Math.floor(message.content.length / 4)),
    };
  }
  while (estimatePassTokens(turn, pass) > target && turn.historyParams.length > 0)
    turn.historyParams.shift();
}

const summaryInstructions = `You compact the working memory of a programming agent that is in the middle of a task.
Write a concise note in markdown with exactly these sections:
## Goal
## Discoveries
## Accomplished
## Files
Keep facts the agent needs to continue: paths, names, decisions, errors seen, what is done and what remains.
Leave out chatter. Do not call tools.`;

/** Asks the model for the summary note; falls back to a mechanical one if the call fails. */
async function* summarise(
  turn: TurnContext,
  older: ITurnMessage[],
): AsyncGenerator<AgentEvent, string> {
  const { state } = turn;
  const window = turn.provider.contextWindow;
  const budget = window ? Math.floor(window * 4 * 0.5) : 400_000;
  const previous = state.summary ? `Summary written earlier:\n${state.summary}\n\n` : "";
  const transcript = renderTranscript(older, Math.max(2_000, budget - previous.length));
  try {
    const reply = yield* callModel(
      {
        model: state.activeModel,
        messages: [
          { role: "system", content: summaryInstructions },
          {
            role: "user",
            content: `The agent's goal:\n${clip(state.goal, 4_000)}\n\n${previous}Messages to summarise:\n${transcript}`,
          },
        ],
        ...samplingOf(turn),
      },
      modelCallSettings(turn, false, `summary-${state.passCount}`),
    );
    yield accountUsage(turn, reply.usage);
    const text = reply.text.trim();
    if (text) return text;
  } catch (error) {
    if (isAbortError(error) || turn.signal.aborted) throw error;
    turn.logger.warn({ err: error }, "summary call failed; using a mechanical summary");
  }
  return mechanicalSummary(state.goal, previous, older);
}

/** The messages as plain text for a summary or synthesis, keeping the newest within `budget`. */
export function renderTranscript(messages: ITurnMessage[], budget: number): string {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === "tool")
      lines.push(`RESULT of ${message.name ?? "tool"}: ${clip(message.content, 2_000)}`);
    else if (message.role === "assistant") {
      const { content } = splitThinking(message.content);
      if (content.trim()) lines.push(`ASSISTANT: ${clip(content, 2_000)}`);
      for (const call of message.toolCalls ?? [])
        lines.push(`CALL ${call.name} ${clip(call.arguments, 500)}`);
    } else lines.push(`${message.role.toUpperCase()}: ${clip(message.content, 4_000)}`);
  }
  let total = 0;
  let first = lines.length;
  while (first > 0) {
    const length = (lines[first - 1] as string).length + 1;
    if (total + length > budget) break;
    total += length;
    first -= 1;
  }
  const kept = lines.slice(first);
  if (first > 0) kept.unshift(`[…${first} earlier entries omitted]`);
  return kept.join("\n");
}

function mechanicalSummary(goal: string, previous: string, older: ITurnMessage[]): string {
  const accomplished: string[] = [];
  const files = new Set<string>();
  for (const message of older) {
    for (const call of message.toolCalls ?? []) {
      accomplished.push(`- ${call.name} ${clip(call.arguments, 120)}`);
      const path = /"path"\s*:\s*"([^"]+)"/.exec(call.arguments)?.[1];
      if (path) files.add(path);
    }
  }
  return [
    `## Goal\n${clip(goal, 1_000)}`,
    `## Discoveries\n${previous ? clip(previous, 4_000) : "(not summarised: the model could not be reached)"}`,
    `## Accomplished\n${accomplished.slice(-50).join("\n") || "- nothing yet"}`,
    `## Files\n${[...files].map((file) => `- ${file}`).join("\n") || "- none recorded"}`,
  ].join("\n");
}

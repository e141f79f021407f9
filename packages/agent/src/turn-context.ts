// What every phase of one turn shares: normalised input, tunables, state, tools, model, signal.
import {
  type AgentEvent,
  type ApprovalPolicy,
  agentEvent,
  type IChatMessage,
  type ProviderQuirkCode,
  type TokenUsage,
  type TurnLimits,
  type TurnMode,
} from "@gadget/protocol";
import type { ApprovalDecision } from "./approvals.ts";
import type { ChatMessageParam, ChatModel, ChatTool } from "./chat-model.ts";
import type { StateDocument } from "./living-document.ts";
import type { TurnState } from "./state.ts";
import type { AnyTool, ContextSource } from "./tool.ts";
import type { EngineLogger, EngineTunables, ProviderConfig, TurnOptions } from "./turn-input.ts";
import { addUsage, costOf } from "./usage.ts";

export interface TurnContext {
  goal: string;
  history: IChatMessage[];
  provider: ProviderConfig;
  mode: TurnMode;
  approval: ApprovalPolicy;
  /** Standing approvals: keys (exact commands) that run without asking under `on-write`. */
  allowedCommands: Set<string>;
  limits: TurnLimits;
  workspace: string;
  contextSources: ContextSource[];
  options: TurnOptions;
  tunables: EngineTunables;
  logger: EngineLogger;
  now: () => Date;
  /** The turn's own signal: aborted by the caller's signal or when the generator is closed. */
  signal: AbortSignal;
  state: TurnState;
  document: StateDocument;
  /** Tools offered in this mode, and by name. */
  tools: AnyTool[];
  toolsByName: Map<string, AnyTool>;
  /** Every tool the host gave, to explain "not available in ask mode". */
  allToolNames: Set<string>;
  toolDefinitions: ChatTool[];
  /** Estimated tokens of `toolDefinitions`, sent with every main-loop request. */
  toolDefinitionTokens: number;
  systemPrompt: string;
  historyParams: ChatMessageParam[];
  model: ChatModel;
  /** The provider's quirks: from the input, plus what this turn learned (shared by every call). */
  quirks: Set<ProviderQuirkCode>;
  /** Decisions known before the engine asks (from the input). */
  knownDecisions: Map<string, ApprovalDecision>;
  /** A rate-limit wait carried over from before a resume (epoch ms); the first model call takes it. */
  quotaWait: { since: number; until: number } | null;
}

/** Sends a copy of the state to the host's checkpoint hook; a failing hook is logged, not fatal. */
export async function checkpoint(turn: TurnContext): Promise<void> {
  const hook = turn.options.onCheckpoint;
  if (!hook) return;
  try {
    await hook(structuredClone(turn.state));
  } catch (error) {
    turn.logger.warn({ err: error }, "onCheckpoint failed; the turn continues");
  }
}

/** Adds one call's usage and cost to the state; returns the `cost_update` event to yield. */
export function accountUsage(turn: TurnContext, usage: TokenUsage): AgentEvent {
  const { state } = turn;
  addUsage(state.tokens, usage);
  state.totalCost += costOf(usage, turn.provider.pricing);
  return agentEvent("cost_update", {
    totalCost: state.totalCost,
    tokens: { ...state.tokens },
    priced: turn.provider.pricing !== undefined,
  });
}

/** Settings for `callModel` in this turn. */
export function modelCallSettings(turn: TurnContext, emitText: boolean, callIdPrefix: string) {
  const quotaWait = turn.quotaWait;
  turn.quotaWait = null;
  return {
    ...(quotaWait ? { quotaWait } : {}),
    model: turn.model,
    signal: turn.signal,
    retry: turn.tunables.retry,
    logger: turn.logger,
    emitText,
    callIdPrefix,
    quirks: turn.quirks,
    provider: { name: turn.provider.name, baseUrl: turn.provider.baseUrl },
  };
}

/** Sampling parameters (and the answer's length limit) of the provider, as a ChatRequest wants them. */
export function samplingOf(turn: TurnContext): {
  temperature?: number;
  topP?: number;
  topK?: number;
  maxTokens?: number;
} {
  const params = turn.provider.params ?? {};
  const sampling: { temperature?: number; topP?: number; topK?: number; maxTokens?: number } = {};
  if (params.temperature !== undefined) sampling.temperature = params.temperature;
  if (params.topP !== undefined) sampling.topP = params.topP;
  if (params.topK !== undefined) sampling.topK = params.topK;
  if (params.maxTokens !== undefined) sampling.maxTokens = params.maxTokens;
  return sampling;
}

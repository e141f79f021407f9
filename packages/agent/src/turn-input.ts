// What a host gives runTurn (input data, options with hooks and tunables) and what it gets back.
import type {
  ApprovalPolicy,
  ExitReason,
  IChatMessage,
  ITurnMessage,
  ModelParams,
  Pricing,
  ProviderQuirkCode,
  TokenUsage,
  TurnLimits,
  TurnMode,
} from "@gadget/protocol";
import type { ApprovalDecision, ApprovalHandler } from "./approvals.ts";
import type { ChatModel } from "./chat-model.ts";
import type { TurnHooks } from "./hook-host.ts";
import { defaultRetryPolicy, type RetryPolicy } from "./retry.ts";
import type { TurnState } from "./state.ts";
import type { SteeringInbox } from "./steering.ts";
import type { AnyTool, ContextSource } from "./tool.ts";

/** The model provider of a work order (as `POST /api/providers` takes it). */
export interface ProviderConfig {
  /** The provider's name as the user gave it, named in errors (e.g. when it cannot be reached). */
  name?: string;
  /** An OpenAI-compatible base URL, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** Sent as a bearer token; never logged. */
  apiKey: string;
  modelId: string;
  params?: ModelParams;
  /** The stronger model switched to once when the turn stops making progress. */
  escalationModelId?: string;
  /** Context window in tokens; enables proactive compaction. Without it only reactive compaction runs. */
  contextWindow?: number;
  /** Per-million-token prices used for `cost_update` and the cost budget. */
  pricing?: Pricing;
  /**
   * What the provider is known to refuse or demand (the work order's `provider.quirks`): requests
   * are adapted from the first call. Quirks learned during the turn are added (`provider_adapted`).
   */
  quirks?: ProviderQuirkCode[];
}

/** Everything a turn is about, as plain data (a drone builds it from an IWorkOrder). */
export interface TurnInput {
  /** The user's prompt. */
  goal: string;
  /** The session's earlier messages (IChatMessage), oldest first. */
  history?: IChatMessage[];
  provider: ProviderConfig;
  /** Default `agent`. `ask` offers read tools only. */
  mode?: TurnMode;
  /** Default `auto`. `on-write` asks before every write-permission call. */
  approval?: ApprovalPolicy;
  /**
   * Under `on-write`, calls whose tool's standing-approval key is listed run without asking
   * (run_command: the exact command string). Default none.
   */
  allowedCommands?: string[];
  /** Absent fields mean no limit. */
  limits?: TurnLimits;
  tools?: AnyTool[];
  /** Loaded in parallel before the first pass (pre-enrichment). */
  contextSources?: ContextSource[];
  /**
   * The project's skills, listed in the system prompt by name and description (the host's
   * `load_skill` tool reads one). Default none.
   */
  skills?: Array<{ name: string; description: string }>;
  /** Absolute path of the workspace, passed to every tool. */
  workspace: string;
  /**
   * Continue a turn: a saved TurnState (validated; preferred) and/or the turn's stored messages
   * (used when there is no valid state). The shape of IWorkOrder's `resume`.
   */
  resume?: { state?: unknown; messages?: ITurnMessage[] };
  /**
   * A rate-limit wait the turn was in when it stopped (ISO times; IWorkOrder's `quotaWait`): the
   * first model call waits until `until`, as the same wait begun at `since`.
   */
  quotaWait?: { since: string; until: string };
  /** Decisions already known when the turn starts, by approval id (e.g. sent with a resume). */
  approvalDecisions?: Record<string, ApprovalDecision>;
}

/** A pino-compatible logger. The engine never logs API keys or message contents. */
export interface EngineLogger {
  debug(object: object, message?: string): void;
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

/** Knobs with defaults; tests shrink the delays, benchmarks the limits. */
export interface EngineTunables {
  /** Longest a tool call may run unless the tool sets `timeoutMs`. Default 120 000 ms. */
  toolTimeoutMs: number;
  /** Longest pre-enrichment waits for its context sources. Default 8 000 ms. */
  preEnrichmentTimeoutMs: number;
  /** Longest one model HTTP request may take. Default 600 000 ms. */
  requestTimeoutMs: number;
  /** Retries of 408/409/429/5xx and network errors. */
  retry: RetryPolicy;
  /** Share of `contextWindow` above which the prompt is compacted before a call. Default 0.8. */
  compactionThreshold: number;
  /** The most recent passes whose messages compaction never prunes or summarises. Default 2. */
  keepRecentPasses: number;
  /** A tool output longer than this (characters) is cut before the model sees it. Default 50 000. */
  maxToolOutputChars: number;
  /** Read calls of one response running at the same time. Default 8. */
  maxParallelTools: number;
  /** The same call this many times (without a different successful write between) is `stuck`. Default 3. */
  stuckRepeatLimit: number;
  /** The same failing call this many times is `stuck`. Default 2. */
  stuckFailureLimit: number;
  /** Consecutive empty answers (no text, no tool calls) before the turn counts as stuck. Default 3. */
  maxEmptyResponses: number;
  /** Consecutive low-progress passes before switching to the escalation model. Default 2. */
  escalateAfterLowPasses: number;
  /** Signatures remembered for duplicate detection (oldest forgotten first). Default 1 000. */
  signatureWindow: number;
  /** Tool-result records kept in the state for synthesis and hosts. Default 200. */
  toolResultHistory: number;
  /** Longest a living-document section may grow (characters; oldest lines dropped). Default 8 000. */
  maxDocumentSectionChars: number;
  /**
   * Role of the per-pass current-state message. Default `user`: some chat templates reject a
   * `system` message after the first one.
   */
  stateMessageRole: "user" | "system";
}

export const defaultTunables: EngineTunables = {
  toolTimeoutMs: 120_000,
  preEnrichmentTimeoutMs: 8_000,
  requestTimeoutMs: 600_000,
  retry: defaultRetryPolicy,
  compactionThreshold: 0.8,
  keepRecentPasses: 2,
  maxToolOutputChars: 50_000,
  maxParallelTools: 8,
  stuckRepeatLimit: 3,
  stuckFailureLimit: 2,
  maxEmptyResponses: 3,
  escalateAfterLowPasses: 2,
  signatureWindow: 1_000,
  toolResultHistory: 200,
  maxDocumentSectionChars: 8_000,
  stateMessageRole: "user",
};

/** Hooks and settings of one run; nothing here is persisted. */
export interface TurnOptions {
  /** Cancels the turn: reaches the HTTP request, every running tool and any approval wait. */
  signal?: AbortSignal;
  /**
   * Asked for each call that needs approval. Without it the turn pauses (`approval_needed`)
   * and is continued later with `resume` + `approvalDecisions`. See {@link ApprovalChannel}.
   */
  onApproval?: ApprovalHandler;
  /** The project's hooks (PreToolUse, PostToolUse, Stop, SessionStart), run by the host. */
  hooks?: TurnHooks;
  /** Users' messages to the running turn, taken before each model call (steering). */
  steering?: SteeringInbox;
  /** Receives a copy of the serialisable state after each pass and before waiting for approval. */
  onCheckpoint?: (state: TurnState) => void | Promise<void>;
  logger?: EngineLogger;
  tunables?: Partial<Omit<EngineTunables, "retry">> & { retry?: Partial<RetryPolicy> };
  /** Replaces the OpenAI client (in-process models for benchmarks). */
  model?: ChatModel;
  /** A `fetch` for the OpenAI client (e.g. a proxy-aware one). */
  fetch?: typeof fetch;
  /** Clock for message timestamps. Default `() => new Date()`. */
  now?: () => Date;
}

/** The generator's return value. */
export interface TurnOutcome {
  reason: ExitReason;
  /** The final answer shown to the user ("" when cancelled, paused or failed). */
  response: string;
  /** This turn's messages (prompt, assistant, tool, answer): store them to resume elsewhere. */
  messages: ITurnMessage[];
  /** The final state; pass it back as `resume.state` to continue a paused turn. */
  state: TurnState;
  passes: number;
  usage: TokenUsage;
  totalCost: number;
  /** Set when `reason` is `error`. */
  error?: { code: string; message: string };
}

/** Merges partial tunables over the defaults. */
export function resolveTunables(partial: TurnOptions["tunables"] = {}): EngineTunables {
  return {
    ...defaultTunables,
    ...partial,
    retry: { ...defaultTunables.retry, ...partial.retry },
  };
}

// @gadget/agent: the Agentic Workflow Loop. Hosts call runTurn and relay its events.
export {
  ApprovalChannel,
  type ApprovalDecision,
  type ApprovalHandler,
  declinedOutput,
} from "./approvals.ts";
export type {
  ChatChunk,
  ChatMessageParam,
  ChatModel,
  ChatRequest,
  ChatTool,
} from "./chat-model.ts";
export { openAIChatModel } from "./chat-model.ts";
export { estimateTokens, prunedOutput } from "./compaction.ts";
export { exitConditions } from "./exit-conditions.ts";
export type { HookInvocation, HookVerdict, TurnHooks } from "./hook-host.ts";
export { maxStopContinuations } from "./hooks.ts";
export {
  checkAndProbe,
  checkProvider,
  fetchModelList,
  type ModelListAnswer,
  type ModelListSender,
  maxModelListBytes,
  type ProbeSettings,
  type ProviderCheckOptions,
  readAtMost,
  Unreachable,
} from "./provider-check.ts";
export { ProviderError, type ProviderErrorCode } from "./provider-error.ts";
export {
  maxProbeAnswerBytes,
  type ProbeOptions,
  type ProbeOutcome,
  probeProvider,
} from "./provider-probe.ts";
export type { LearnedQuirk } from "./rejections.ts";
export { defaultRetryPolicy, type RetryPolicy } from "./retry.ts";
export { runTurn, type StepOutcome } from "./run-turn.ts";
export {
  interruptedOutput,
  parseTurnState,
  TURN_STATE_SCHEMA_VERSION,
  type TurnState,
  turnStateSchema,
} from "./state.ts";
export { SteeringInbox, type SteeringMessage } from "./steering.ts";
export { gracefulMessage } from "./synthesis.ts";
export * from "./tool.ts";
export { duplicateOutput } from "./tool-execution.ts";
export {
  defaultTunables,
  type EngineLogger,
  type EngineTunables,
  type ProviderConfig,
  type TurnInput,
  type TurnOptions,
  type TurnOutcome,
} from "./turn-input.ts";

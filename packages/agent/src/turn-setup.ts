// A turn's context from its input: the input checked, tunables resolved, the state restored from a
// checkpoint or made new, the tools, model and system prompt set up once for every phase.
import { openAIChatModel } from "./chat-model.ts";
import { StateDocument } from "./living-document.ts";
import { buildSystemPrompt, historyMessages, toolDefinitions } from "./prompt.ts";
import { createTurnState, parseTurnState, stateFromMessages, type TurnState } from "./state.ts";
import type { TurnContext } from "./turn-context.ts";
import {
  type EngineLogger,
  resolveTunables,
  type TurnInput,
  type TurnOptions,
} from "./turn-input.ts";

const silentLogger: EngineLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** The context every phase of the turn shares; throws a TypeError for input it cannot run. */
export function createTurnContext(
  input: TurnInput,
  options: TurnOptions,
  signal: AbortSignal,
): TurnContext {
  if (typeof input.goal !== "string") throw new TypeError("input.goal must be a string");
  if (!input.provider?.modelId) throw new TypeError("input.provider.modelId is required");
  if (typeof input.workspace !== "string") throw new TypeError("input.workspace must be a path");
  const tunables = resolveTunables(options.tunables);
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? (() => new Date());
  const mode = input.mode ?? "agent";
  const approval = input.approval ?? "auto";
  const allTools = input.tools ?? [];
  const tools = mode === "ask" ? allTools.filter((tool) => tool.permission === "read") : allTools;

  const fresh = { goal: input.goal, mode, model: input.provider.modelId, now: now() };
  let state: TurnState;
  const saved = parseTurnState(input.resume?.state);
  if (saved) state = saved;
  else {
    if (input.resume?.state !== undefined)
      logger.warn({}, "saved turn state is invalid or of another version; resuming from messages");
    const messages = input.resume?.messages ?? [];
    state =
      messages.length > 0 ? stateFromMessages({ ...fresh, messages }) : createTurnState(fresh);
  }
  const definitions = toolDefinitions(tools);
  return {
    goal: input.goal,
    history: input.history ?? [],
    // A copy: the engine may learn the context window from a provider error.
    provider: { ...input.provider },
    mode,
    approval,
    allowedCommands: new Set(input.allowedCommands ?? []),
    // A copy: a budget that asks may extend them.
    limits: { ...(input.limits ?? {}) },
    workspace: input.workspace,
    contextSources: input.contextSources ?? [],
    options,
    tunables,
    logger,
    now,
    signal,
    state,
    document: new StateDocument(state, tunables.maxDocumentSectionChars),
    tools,
    toolsByName: new Map(tools.map((tool) => [tool.name, tool])),
    allToolNames: new Set(allTools.map((tool) => tool.name)),
    toolDefinitions: definitions,
    toolDefinitionTokens: Math.ceil(JSON.stringify(definitions).length / 4),
    systemPrompt: buildSystemPrompt({
      mode,
      workspace: input.workspace,
      tools,
      approvalOnWrite: approval === "on-write",
      skills: input.skills ?? [],
    }),
    historyParams: historyMessages(input.history ?? []),
    model:
      options.model ??
      openAIChatModel({
        baseUrl: input.provider.baseUrl,
        apiKey: input.provider.apiKey,
        timeoutMs: tunables.requestTimeoutMs,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      }),
    quirks: new Set(input.provider.quirks ?? []),
    knownDecisions: new Map(Object.entries(input.approvalDecisions ?? {})),
    quotaWait: input.quotaWait
      ? { since: Date.parse(input.quotaWait.since), until: Date.parse(input.quotaWait.until) }
      : null,
  };
}

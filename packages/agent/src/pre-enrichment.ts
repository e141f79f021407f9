// Phase 1, pre-enrichment (docs/architecture.md, "The engine"): load project context (tree, README, git status, AGENTS.md)
// in parallel with a timeout before the loop; the result is shown to the model on pass 1 only.
import { type AgentEvent, agentEvent } from "@gadget/protocol";
import { linkedController, raceAbort, sleep } from "./abort.ts";
import { clip } from "./text.ts";
import type { TurnContext } from "./turn-context.ts";

/** Longest text one context source may contribute. */
const maxSourceChars = 12_000;

/**
 * Runs every context source at once and keeps what arrives before the timeout; a source that
 * fails or times out is skipped (the turn does not depend on it).
 */
export async function* preEnrich(turn: TurnContext): AsyncGenerator<AgentEvent, void> {
  const { state } = turn;
  const sources = turn.contextSources;
  state.preEnriched = true;
  if (sources.length === 0) return;
  yield agentEvent("pre_enrichment", { message: "Gathering context…" });

  const timeoutMs = turn.tunables.preEnrichmentTimeoutMs;
  const { controller, dispose } = linkedController(turn.signal);
  const results: Array<{ name: string; text: string } | undefined> = new Array(sources.length);
  const loading = Promise.all(
    sources.map(async (source, index) => {
      try {
        const text = await source.load({ signal: controller.signal, workspace: turn.workspace });
        if (typeof text === "string" && text.trim()) results[index] = { name: source.name, text };
      } catch (error) {
        if (!controller.signal.aborted)
          turn.logger.warn({ source: source.name, err: error }, "context source failed");
      }
    }),
  );
  const deadline = new AbortController();
  try {
    await raceAbort(
      Promise.race([loading, sleep(timeoutMs, deadline.signal).catch(() => undefined)]),
      turn.signal,
    );
  } finally {
    deadline.abort();
    // Sources still running after the timeout are told to stop; their results are ignored.
    controller.abort();
    dispose();
  }
  const loaded = results.filter(
    (entry): entry is { name: string; text: string } => entry !== undefined,
  );
  if (loaded.length === 0) {
    yield agentEvent("pre_enrichment", { message: "No project context found", toolsRun: [] });
    return;
  }
  state.preEnrichedContext = [
    "## Project context (loaded before the first pass)",
    ...loaded.map((entry) => `### ${entry.name}\n${clip(entry.text.trim(), maxSourceChars)}`),
  ].join("\n\n");
  yield agentEvent("pre_enrichment", {
    message: `Pre-loaded ${loaded.length} context source${loaded.length === 1 ? "" : "s"}`,
    toolsRun: loaded.map((entry) => entry.name),
  });
}

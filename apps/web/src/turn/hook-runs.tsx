// The project hooks a turn ran, in order: which hook (event and command), for which tool call, what
// it came to (blocked, rewrote, added context, failed, timed out) and how long it took; a row opens
// to show what the hook printed.
import type { HookOutcome } from "@gadget/protocol";
import { useState } from "react";
import { formatElapsed, toolLabel } from "../lib/format.ts";
import type { HookRun } from "../live/turn-view.ts";

const outcomeWords: Record<HookOutcome, string> = {
  continue: "let it go on",
  context: "added context",
  rewrote: "rewrote the call",
  blocked: "blocked",
  failed: "failed",
  timeout: "timed out, killed",
};

/** What a run did, in words: "blocked run_command", "kept the turn going", "timed out, killed". */
export function hookOutcomeText(run: HookRun): string {
  if (run.outcome === "blocked") {
    if (run.event === "Stop") return "kept the turn going";
    if (run.event === "PreToolUse" && run.tool) return `blocked ${toolLabel(run.tool)}`;
  }
  return outcomeWords[run.outcome];
}

function HookRow({ run }: { run: HookRun }) {
  const [open, setOpen] = useState(false);
  const bad = !run.ok;
  return (
    <li className={`hook-run ${bad ? "hook-run-bad" : ""}`} data-hook-outcome={run.outcome}>
      <button
        type="button"
        className="hook-run-head"
        aria-expanded={open}
        onClick={() => setOpen((value) => !value)}
      >
        <span className="hook-run-event">{run.event}</span>
        <code className="hook-run-command" title={run.command}>
          {run.command}
        </code>
        <span className="hook-run-outcome">{hookOutcomeText(run)}</span>
        <span className="tool-time">{formatElapsed(run.ms)}</span>
      </button>
      {open ? (
        <pre className="tool-pre">{run.output.trim() || "(no output)"}</pre>
      ) : bad && run.output.trim() ? (
        <div className="hook-run-why">{run.output.trim().split("\n")[0]}</div>
      ) : null}
    </li>
  );
}

/** The turn's hook runs; nothing when no hook ran. */
export function HookRuns({ runs }: { runs: HookRun[] }) {
  if (runs.length === 0) return null;
  return (
    <section className="hook-runs" aria-label="Project hooks">
      <div className="tool-detail-label">Hooks ({runs.length})</div>
      <ul>
        {runs.map((run) => (
          <HookRow key={run.seq} run={run} />
        ))}
      </ul>
    </section>
  );
}

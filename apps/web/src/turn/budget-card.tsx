// A budget that asks (`limits.onReach: "ask"`): the turn reached one of its limits and waits. The
// user extends it by an amount of their choosing (`input: {extendBy}`) or lets it finish with an
// answer from what it gathered.
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { ErrorNote } from "../components/error-note.tsx";
import { formatCost, formatTokens } from "../lib/format.ts";
import type { ApprovalItem } from "../live/turn-view.ts";

/** What the agent sends with a budget approval (`packages/agent/src/budget-ask.ts`). */
interface BudgetParams {
  limit: string;
  used: number;
  value: number;
}

const limitWords: Record<
  string,
  { name: string; unit: string; format: (value: number) => string }
> = {
  maxPasses: { name: "passes", unit: "passes", format: String },
  maxToolCalls: { name: "tool calls", unit: "tool calls", format: String },
  tokenBudget: { name: "token budget", unit: "tokens", format: formatTokens },
  costBudget: { name: "cost budget", unit: "$", format: formatCost },
};

function budgetOf(params: unknown): BudgetParams | null {
  const record = params as Partial<BudgetParams> | null | undefined;
  return typeof record?.limit === "string" &&
    typeof record.used === "number" &&
    typeof record.value === "number"
    ? { limit: record.limit, used: record.used, value: record.value }
    : null;
}

/** Whole numbers for counts, any positive amount for money; null when it is not one. */
function amountOf(text: string, limit: string): number | null {
  const amount = Number(text.trim());
  if (!text.trim() || !Number.isFinite(amount) || amount <= 0) return null;
  return limit === "costBudget" ? amount : Number.isInteger(amount) ? amount : null;
}

export function BudgetCard({
  approval,
  onDecide,
}: {
  approval: ApprovalItem;
  /** `extendBy` with approve; rejects with an error to show. */
  onDecide: (approve: boolean, extendBy?: number) => Promise<void>;
}) {
  const budget = budgetOf(approval.params);
  const words = (budget && limitWords[budget.limit]) ?? {
    name: budget?.limit ?? "limit",
    unit: "",
    format: String,
  };
  // As much again as the limit was: what a plain Approve would give.
  const [text, setText] = useState(String(budget?.value ?? ""));
  const extendBy = amountOf(text, budget?.limit ?? "");
  const decision = useMutation({
    mutationFn: (approve: boolean) =>
      onDecide(approve, approve ? (extendBy ?? undefined) : undefined),
  });
  const sent = decision.isSuccess ? decision.variables : null;
  return (
    <article className="approval-card" aria-label="The turn reached its limit">
      <header>
        <span className="approval-tag">Limit reached</span>
        <code className="approval-tool">{words.name}</code>
      </header>
      <p className="approval-description">
        {budget ? `Used ${words.format(budget.used)} of ${words.format(budget.value)}. ` : null}
        Extend it to let the turn go on, or let it finish with an answer from what it gathered.
      </p>
      <ErrorNote error={decision.error} title="Your decision was not sent" />
      <footer>
        {sent === true ? (
          <span className="decision decision-approved">
            Extended by {words.format(extendBy ?? 0)}. The agent goes on.
          </span>
        ) : sent === false ? (
          <span className="decision decision-denied">The turn finishes with an answer.</span>
        ) : (
          <form
            className="budget-extend"
            onSubmit={(event) => {
              event.preventDefault();
              if (extendBy !== null) decision.mutate(true);
            }}
          >
            <label>
              Extend by{words.unit === "$" ? " ($)" : ""}{" "}
              <input
                inputMode={budget?.limit === "costBudget" ? "decimal" : "numeric"}
                value={text}
                onChange={(event) => setText(event.target.value)}
                aria-invalid={extendBy === null}
                size={8}
              />
              {words.unit && words.unit !== "$" ? ` ${words.unit}` : null}
            </label>
            <button
              type="submit"
              className="button primary"
              disabled={decision.isPending || extendBy === null}
            >
              Extend
            </button>
            <button
              type="button"
              className="button"
              disabled={decision.isPending}
              onClick={() => decision.mutate(false)}
            >
              Finish now
            </button>
          </form>
        )}
      </footer>
      {extendBy === null && sent === null ? (
        <small className="field-problem">
          {budget?.limit === "costBudget"
            ? "Enter an amount above 0."
            : "Enter a whole number above 0."}
        </small>
      ) : null}
    </article>
  );
}

// A budget that asks: the limit and what was used, the amount to extend by (checked before it is
// sent), and Finish now.
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { ApprovalItem } from "../live/turn-view.ts";
import { render, screen } from "../test/render.tsx";
import { BudgetCard } from "./budget-card.tsx";

const costApproval: ApprovalItem = {
  id: "budget-3-costBudget",
  tool: "budget",
  kind: "budget",
  params: { limit: "costBudget", used: 0.0512, value: 0.05 },
  description: "The turn reached its limit",
  state: "pending",
  requestedSeq: 9,
  requestedPass: 3,
};

describe("BudgetCard", () => {
  it("says what was used and sends the amount typed as extendBy", async () => {
    const sent: [boolean, number | undefined][] = [];
    render(
      <BudgetCard
        approval={costApproval}
        onDecide={async (approve, extendBy) => {
          sent.push([approve, extendBy]);
        }}
      />,
    );
    expect(screen.getByText(/Used \$0\.0512 of \$0\.0500/)).toBeInTheDocument();
    const amount = screen.getByLabelText(/Extend by/);
    expect(amount).toHaveValue("0.05");
    await userEvent.clear(amount);
    await userEvent.type(amount, "-1");
    expect(screen.getByRole("button", { name: "Extend" })).toBeDisabled();
    expect(screen.getByText("Enter an amount above 0.")).toBeInTheDocument();
    await userEvent.clear(amount);
    await userEvent.type(amount, "0.25");
    await userEvent.click(screen.getByRole("button", { name: "Extend" }));
    expect(sent).toEqual([[true, 0.25]]);
    expect(await screen.findByText(/Extended by \$0\.2500/)).toBeInTheDocument();
  });

  it("takes whole numbers only for passes, and Finish now declines", async () => {
    const sent: [boolean, number | undefined][] = [];
    render(
      <BudgetCard
        approval={{ ...costApproval, params: { limit: "maxPasses", used: 4, value: 4 } }}
        onDecide={async (approve, extendBy) => {
          sent.push([approve, extendBy]);
        }}
      />,
    );
    expect(screen.getByText(/Used 4 of 4/)).toBeInTheDocument();
    const amount = screen.getByLabelText(/Extend by/);
    await userEvent.clear(amount);
    await userEvent.type(amount, "1.5");
    expect(screen.getByRole("button", { name: "Extend" })).toBeDisabled();
    await userEvent.click(screen.getByRole("button", { name: "Finish now" }));
    expect(sent).toEqual([[false, undefined]]);
    expect(await screen.findByText(/finishes with an answer/)).toBeInTheDocument();
  });
});

// Approval cards: what will happen, Approve and Deny, and a failed decision in words.

import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/api-error.ts";
import type { ApprovalItem } from "../live/turn-view.ts";
import { render, screen } from "../test/render.tsx";
import { ApprovalCard } from "./approval-card.tsx";

const writeApproval: ApprovalItem = {
  id: "ap-1",
  callId: "call-1",
  tool: "write_file",
  params: { path: "notes/todo.md", content: "- ship it\n" },
  description: "Write notes/todo.md",
  state: "pending",
  requestedSeq: 4,
  requestedPass: 1,
};

describe("ApprovalCard", () => {
  it("shows the file and content a write would produce", () => {
    render(<ApprovalCard approval={writeApproval} onDecide={async () => {}} />);
    expect(screen.getByText("Write notes/todo.md")).toBeInTheDocument();
    expect(screen.getByText("notes/todo.md")).toBeInTheDocument();
    expect(screen.getByText("- ship it")).toBeInTheDocument();
  });

  it("sends Approve and then says it was approved", async () => {
    const decisions: boolean[] = [];
    render(
      <ApprovalCard
        approval={writeApproval}
        onDecide={async (approve) => {
          decisions.push(approve);
        }}
      />,
    );
    await userEvent.click(screen.getByRole("button", { name: "Approve" }));
    expect(decisions).toEqual([true]);
    expect(await screen.findByText(/Approved/)).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Deny" })).not.toBeInTheDocument();
  });

  it("sends Deny and then says it was denied", async () => {
    const decisions: boolean[] = [];
    render(
      <ApprovalCard
        approval={{ ...writeApproval, tool: "run_command", params: { command: "rm -rf build" } }}
        onDecide={async (approve) => {
          decisions.push(approve);
        }}
      />,
    );
    expect(screen.getByText("rm -rf build")).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Deny" }));
    expect(decisions).toEqual([false]);
    expect(await screen.findByText(/Denied/)).toBeInTheDocument();
  });

  it("shows why a decision failed and lets the user try again", async () => {
    let attempts = 0;
    render(
      <ApprovalCard
        approval={writeApproval}
        onDecide={async () => {
          attempts += 1;
          if (attempts === 1)
            throw new ApiError("conflict", "This approval was already decided.", 409);
        }}
      />,
    );
    await userEvent.click(screen.getByRole("button", { name: "Approve" }));
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "This approval was already decided.",
    );
    await userEvent.click(screen.getByRole("button", { name: "Approve" }));
    expect(await screen.findByText(/Approved/)).toBeInTheDocument();
    expect(attempts).toBe(2);
  });
});

describe("ApprovalCard for a command", () => {
  const commandApproval: ApprovalItem = {
    ...writeApproval,
    id: "ap-2",
    tool: "run_command",
    params: { command: "node test.js" },
    description: "Run `node test.js`",
  };

  it("offers to always allow the exact command, and says so once chosen", async () => {
    const decisions: Array<[boolean, boolean | undefined]> = [];
    render(
      <ApprovalCard
        approval={commandApproval}
        offerAlwaysAllow
        onDecide={async (approve, alwaysAllow) => {
          decisions.push([approve, alwaysAllow]);
        }}
      />,
    );
    await userEvent.click(
      screen.getByRole("button", { name: "Always allow this command in this session" }),
    );
    expect(decisions).toEqual([[true, true]]);
    expect(await screen.findByText(/always allowed in this session/)).toBeInTheDocument();
  });

  it("approves once without always allowing", async () => {
    const decisions: Array<[boolean, boolean | undefined]> = [];
    render(
      <ApprovalCard
        approval={commandApproval}
        offerAlwaysAllow
        onDecide={async (approve, alwaysAllow) => {
          decisions.push([approve, alwaysAllow]);
        }}
      />,
    );
    await userEvent.click(screen.getByRole("button", { name: "Approve" }));
    expect(decisions).toEqual([[true, undefined]]);
  });

  it("offers no standing approval for a file write, or where the caller does not", () => {
    render(<ApprovalCard approval={writeApproval} offerAlwaysAllow onDecide={async () => {}} />);
    render(<ApprovalCard approval={commandApproval} onDecide={async () => {}} />);
    expect(
      screen.queryByRole("button", { name: "Always allow this command in this session" }),
    ).toBeNull();
  });
});

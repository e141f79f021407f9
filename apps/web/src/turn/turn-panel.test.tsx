// The live turn panel: status line, tools, approvals, Stop / Resume, Changes and past turns.
import { type ChatTurn, type TurnEvent, WAITING_FOR_WORKTREE } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/api-error.ts";
import type { TurnSnapshot } from "../live/turn-store.ts";
import { applyEvents, emptyTurnView } from "../live/turn-view.ts";
import { SessionHeader } from "../pages/session-header.tsx";
import { event, numbered, turnRecord } from "../test/events.ts";
import { render, screen, within } from "../test/render.tsx";
import { type TurnActions, TurnPanel } from "./turn-panel.tsx";
import { StatusLine } from "./turn-status.tsx";

function snapshot(turn: ChatTurn, events: TurnEvent[], eventsLoaded = true): TurnSnapshot {
  return { turn, view: applyEvents(emptyTurnView(), events), eventsLoaded, loadError: null };
}

function recordingActions(overrides: Partial<TurnActions> = {}) {
  const calls: string[] = [];
  const actions: TurnActions = {
    cancel: async () => {
      calls.push("cancel");
    },
    resume: async () => {
      calls.push("resume");
    },
    decide: async (approvalId, approve) => {
      calls.push(`${approvalId}:${approve}`);
    },
    revert: async () => {
      calls.push("revert");
      return {
        revert: { commit: "abcdef1234567890", files: ["a.txt"] },
        turn: turnRecord({ status: "completed", revertedAt: new Date(), revertCommit: "abcdef1" }),
      };
    },
    loadEvents: () => {
      calls.push("load");
    },
    ...overrides,
  };
  return { calls, actions };
}

const liveEvents = numbered([
  ["dispatched", { droneId: "d1", droneName: "laptop" }],
  ["status", { message: "Pass 1: reading", pass: 1, model: "small" }],
  ["thinking", { text: "The test fails because of a typo." }],
  ["tool_start", { callId: "c1", tool: "read_file", params: { path: "src/app.ts" } }],
  ["tool_result", { callId: "c1", tool: "read_file", ok: true, summary: "120 lines" }],
  ["status", { message: "Pass 2: fixing", pass: 2, model: "large" }],
  ["tool_start", { callId: "c2", tool: "run_command", params: { command: "npm test" } }],
  ["tool_output", { callId: "c2", stream: "stdout", text: "PASS src/app.test.ts\n" }],
  [
    "cost_update",
    { totalCost: 0.0123, tokens: { input: 1000, output: 200, reasoning: 0, cached: 0 } },
  ],
]);

describe("TurnPanel", () => {
  it("shows a running turn: status line, reasoning, tool rows and cost against budget", () => {
    const turn = turnRecord({ status: "processing", limits: { costBudget: 1 } });
    render(
      <TurnPanel snapshot={snapshot(turn, liveEvents)} actions={recordingActions().actions} />,
    );
    const status = screen.getByText("Working").closest(".status-line") as HTMLElement;
    expect(status).toHaveTextContent("pass 2");
    expect(status).toHaveTextContent("large");
    expect(status).toHaveTextContent("1 escalation");
    expect(status).toHaveTextContent("on laptop");
    expect(screen.getByText(/Reasoning/)).toBeInTheDocument();
    const rows = screen
      .getAllByRole("button", { expanded: false })
      .filter((row) => row.classList.contains("tool-row-head"));
    expect(rows.map((row) => row.textContent)).toEqual([
      expect.stringContaining("read_file"),
      expect.stringContaining("run_command"),
    ]);
    expect(rows[0]).toHaveTextContent("120 lines");
    expect(rows[1]).toHaveTextContent("running");
    expect(screen.getByText("PASS src/app.test.ts")).toBeInTheDocument();
    expect(screen.getByText("$0.0123")).toBeInTheDocument();
    expect(screen.getByText("/ $1.00")).toBeInTheDocument();
  });

  it("opens a tool row to show its arguments and output", async () => {
    const turn = turnRecord({ status: "processing" });
    render(
      <TurnPanel snapshot={snapshot(turn, liveEvents)} actions={recordingActions().actions} />,
    );
    await userEvent.click(screen.getByRole("button", { name: /run_command/ }));
    expect(screen.getByText(/"command": "npm test"/)).toBeInTheDocument();
    expect(screen.getByText("Output")).toBeInTheDocument();
  });

  it("stops a running turn with Stop", async () => {
    const { calls, actions } = recordingActions();
    render(<TurnPanel snapshot={snapshot(turnRecord(), liveEvents)} actions={actions} />);
    await userEvent.click(screen.getByRole("button", { name: "Stop" }));
    expect(calls).toEqual(["cancel"]);
  });

  it("shows approval cards while the turn waits and sends the decision", async () => {
    const { calls, actions } = recordingActions();
    const events = [
      ...liveEvents,
      ...numbered(
        [
          [
            "approval",
            {
              approvals: [
                {
                  id: "ap1",
                  callId: "w1",
                  tool: "write_file",
                  params: { path: "a.txt", content: "A" },
                  description: "Write a.txt",
                },
                {
                  id: "ap2",
                  callId: "w2",
                  tool: "write_file",
                  params: { path: "b.txt", content: "B" },
                  description: "Write b.txt",
                },
              ],
            },
          ],
        ],
        liveEvents.length + 1,
      ),
    ];
    render(
      <TurnPanel
        snapshot={snapshot(turnRecord({ status: "awaiting_approval" }), events)}
        actions={actions}
      />,
    );
    expect(screen.getByText("Waiting for your approval")).toBeInTheDocument();
    const cards = screen.getAllByRole("article", { name: "Approval for write_file" });
    await userEvent.click(within(cards[0]!).getByRole("button", { name: "Approve" }));
    await userEvent.click(within(cards[1]!).getByRole("button", { name: "Deny" }));
    expect(calls).toEqual(["ap1:true", "ap2:false"]);
  });

  it("offers Resume for an interrupted turn and says why when it fails", async () => {
    const { actions } = recordingActions({
      resume: async () => {
        throw new ApiError("no_drone_online", "No drone is online to resume this turn.", 503);
      },
    });
    const turn = turnRecord({
      status: "interrupted",
      exitReason: "interrupted",
      finishedAt: new Date(),
    });
    render(<TurnPanel snapshot={snapshot(turn, liveEvents)} actions={actions} />);
    expect(screen.queryByRole("button", { name: "Stop" })).not.toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Resume" }));
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "No drone is online to resume this turn.",
    );
  });

  it("shows per-file diffs in the Changes tab", async () => {
    const diff = [
      "diff --git a/a.txt b/a.txt",
      "--- a/a.txt",
      "+++ b/a.txt",
      "@@ -1 +1 @@",
      "-old line",
      "+new line",
    ].join("\n");
    const events = [
      ...liveEvents,
      ...numbered(
        [
          ["changes", { files: [{ path: "a.txt", status: "modified" }], diff, truncated: false }],
          ["response", { message: "Changed `a.txt`." }],
          ["done", { reason: "completed", passes: 2, totalCost: 0.0123 }],
        ],
        liveEvents.length + 1,
      ),
    ];
    const turn = turnRecord({
      status: "completed",
      finishedAt: new Date(),
      exitReason: "completed",
    });
    render(<TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />);
    await userEvent.click(screen.getByRole("tab", { name: "Changes (1)" }));
    expect(screen.getByText("+new line")).toHaveClass("diff-add");
    expect(screen.getByText("-old line")).toHaveClass("diff-del");
    const diffView = document.querySelector(".diff-view") as HTMLElement;
    expect(within(diffView).getByText("a.txt")).toBeInTheDocument();
    expect(
      screen.getByText(/2 passes · 2 tool calls · 1.2k tokens · \$0.0123/),
    ).toBeInTheDocument();
  });

  it("shows a past turn's stats and answer, and reads its steps on request", async () => {
    const { calls, actions } = recordingActions();
    const turn = turnRecord({
      status: "completed",
      exitReason: "completed",
      response: "All **green** now.\n\n```ts\nconst ok = true;\n```",
      finishedAt: new Date(),
      stats: {
        toolCallCount: 4,
        inputTokens: 3000,
        thinkingTokenCount: 0,
        responseTokens: 500,
        durationMs: 65_000,
        durationLabel: "1m 05s",
        passes: 3,
        cost: 0.25,
      },
    });
    render(<TurnPanel snapshot={snapshot(turn, [], false)} actions={actions} />);
    expect(
      screen.getByText(/3 passes · 4 tool calls · 3.5k tokens · \$0.2500 · 1m 05s/),
    ).toBeInTheDocument();
    expect(screen.getByText("green").tagName).toBe("STRONG");
    expect(document.querySelector("pre.code-block .hljs-keyword")).toHaveTextContent("const");
    await userEvent.click(screen.getByRole("button", { name: "Show steps and changes" }));
    expect(calls).toEqual(["load"]);
  });

  it("shows errors from the turn in words", () => {
    const turn = turnRecord({
      status: "failed",
      error: { code: "provider_error", message: "The provider refused the API key." },
      finishedAt: new Date(),
    });
    render(<TurnPanel snapshot={snapshot(turn, [], false)} actions={recordingActions().actions} />);
    expect(screen.getByRole("alert")).toHaveTextContent("The provider refused the API key.");
    expect(screen.getByRole("button", { name: "Resume" })).toBeInTheDocument();
  });

  it("says when the server waits on its database, and that nothing is lost", () => {
    const turn = turnRecord({
      status: "processing",
      waiting: { reason: "database", on: "database", since: new Date() },
    });
    const { rerender } = render(
      <TurnPanel snapshot={snapshot(turn, liveEvents)} actions={recordingActions().actions} />,
    );
    expect(screen.getByRole("status")).toHaveTextContent(
      /Reconnecting to the database.*nothing is lost/,
    );
    rerender(
      <TurnPanel
        snapshot={snapshot({ ...turn, waiting: null }, liveEvents)}
        actions={recordingActions().actions}
      />,
    );
    expect(screen.queryByText(/Reconnecting to the database/)).toBeNull();
  });

  it("says at once that the drone is offline, with the time left, and stops saying it when it is back", () => {
    const since = Date.now();
    const lost = [
      ...liveEvents,
      event(liveEvents.length + 1, "drone_lost", {
        drone: "d1",
        droneName: "laptop",
        since: new Date(since).toISOString(),
        graceMs: 60_000,
      }),
    ];
    const turn = turnRecord({ status: "processing" });
    const { rerender } = render(
      <TurnPanel snapshot={snapshot(turn, lost)} actions={recordingActions().actions} />,
    );
    expect(screen.getByText("Drone offline", { selector: ".status-word" })).toBeInTheDocument();
    expect(screen.getByRole("status")).toHaveTextContent(
      /laptop lost its connection.*interrupted in [01]:\d\d unless it comes back/,
    );
    const back = [
      ...lost,
      event(lost.length + 1, "drone_back", { drone: "d1", droneName: "laptop", offlineMs: 900 }),
    ];
    rerender(<TurnPanel snapshot={snapshot(turn, back)} actions={recordingActions().actions} />);
    expect(screen.queryByText(/Drone offline/)).toBeNull();
    expect(screen.getByText("Working", { selector: ".status-word" })).toBeInTheDocument();
  });

  describe("Revert this turn", () => {
    const finished = (overrides: Partial<ChatTurn> = {}) =>
      turnRecord({
        status: "completed",
        exitReason: "completed",
        finishedAt: new Date(),
        changes: [{ path: "a.txt", status: "modified" }],
        ...overrides,
      });

    it("asks first, then says which files the revert put back", async () => {
      const { calls, actions } = recordingActions();
      render(<TurnPanel snapshot={snapshot(finished(), [], false)} actions={actions} />);
      await userEvent.click(screen.getByRole("button", { name: "Revert this turn" }));
      const question = screen.getByRole("group", { name: "Revert this turn" });
      expect(question).toHaveTextContent("Undo this turn's changes to 1 file?");
      expect(calls).toEqual([]);
      await userEvent.click(within(question).getByRole("button", { name: "Keep the changes" }));
      expect(calls).toEqual([]);
      await userEvent.click(screen.getByRole("button", { name: "Revert this turn" }));
      await userEvent.click(screen.getByRole("button", { name: "Revert" }));
      expect(calls).toEqual(["revert"]);
      expect(await screen.findByRole("status")).toHaveTextContent(
        "Reverted: a.txt back as before this turn (commit abcdef1).",
      );
    });

    it("says when the turn's changes were put back without a commit", async () => {
      const { actions } = recordingActions({
        revert: async () => ({
          revert: { commit: null, files: ["a.txt"] },
          turn: finished({ revertedAt: new Date(), revertCommit: null }),
        }),
      });
      render(<TurnPanel snapshot={snapshot(finished(), [], false)} actions={actions} />);
      await userEvent.click(screen.getByRole("button", { name: "Revert this turn" }));
      await userEvent.click(screen.getByRole("button", { name: "Revert" }));
      expect(await screen.findByRole("status")).toHaveTextContent(
        "Reverted: a.txt back as before this turn (its changes had not been committed; nothing new was committed).",
      );
    });

    it("names the files later turns changed when the revert is refused", async () => {
      const { actions } = recordingActions({
        revert: async () => {
          throw new ApiError("conflict", "Later turns changed the same lines: a.txt", 409, {
            reason: "revert_conflict",
            files: ["a.txt", "b.txt"],
          });
        },
      });
      render(<TurnPanel snapshot={snapshot(finished(), [], false)} actions={actions} />);
      await userEvent.click(screen.getByRole("button", { name: "Revert this turn" }));
      await userEvent.click(screen.getByRole("button", { name: "Revert" }));
      expect(await screen.findByRole("alert")).toHaveTextContent(
        "Could not revert: later turns changed the same lines in a.txt, b.txt. Nothing was changed",
      );
    });

    it("shows a reverted turn as Reverted, and offers nothing for a turn that changed no files", () => {
      const { actions } = recordingActions();
      const { unmount } = render(
        <TurnPanel
          snapshot={snapshot(
            finished({ revertedAt: new Date(), revertCommit: "1234567abc" }),
            [],
            false,
          )}
          actions={actions}
        />,
      );
      expect(screen.getByRole("status")).toHaveTextContent("Reverted by commit 1234567");
      expect(screen.queryByRole("button", { name: "Revert this turn" })).not.toBeInTheDocument();
      unmount();
      render(
        <TurnPanel snapshot={snapshot(finished({ changes: [] }), [], false)} actions={actions} />,
      );
      expect(screen.queryByRole("button", { name: "Revert this turn" })).not.toBeInTheDocument();
    });
  });

  it("shows the delivery: the live push failure, then the stored push after Deliver now", () => {
    const branch = "gadget/login-fix-64b000";
    const events = numbered([
      [
        "delivery",
        {
          branch,
          commit: "0123456789abcdef",
          pushed: false,
          error: "authentication failed for origin",
        },
      ],
      ["done", { reason: "completed", passes: 1, totalCost: 0 }],
    ]);
    const { rerender } = render(
      <TurnPanel
        snapshot={snapshot(turnRecord({ status: "completed" }), events)}
        actions={recordingActions().actions}
      />,
    );
    const line = screen.getByRole("status", { name: "Delivery" });
    expect(line).toHaveTextContent(
      `Branch ${branch} at 0123456 not pushed: authentication failed for origin`,
    );
    const pushed = turnRecord({
      status: "completed",
      delivery: {
        branch,
        commit: "0123456789abcdef",
        pushedAt: new Date(),
        pullRequestUrl: null,
        error: null,
      },
    });
    rerender(
      <TurnPanel snapshot={snapshot(pushed, events)} actions={recordingActions().actions} />,
    );
    expect(screen.getByRole("status", { name: "Delivery" })).toHaveTextContent(
      `Branch ${branch} at 0123456 pushed to origin`,
    );
  });

  it("links the session's pull request, and says why none was opened", () => {
    const branch = "gadget/signup-64b000";
    const url = "https://github.com/ada/app/pull/7";
    const events = numbered([
      ["delivery", { branch, commit: "0123456789abcdef", pushed: true, pullRequestUrl: url }],
      ["done", { reason: "completed", passes: 1, totalCost: 0 }],
    ]);
    const { rerender } = render(
      <TurnPanel
        snapshot={snapshot(turnRecord({ status: "completed" }), events)}
        actions={recordingActions().actions}
      />,
    );
    expect(screen.getByRole("link", { name: "pull request" })).toHaveAttribute("href", url);
    const refused = turnRecord({
      status: "completed",
      delivery: {
        branch,
        commit: "0123456789abcdef",
        pushedAt: new Date(),
        pullRequestUrl: null,
        error: "GitHub refused the token (401) for ada/app",
      },
    });
    rerender(
      <TurnPanel snapshot={snapshot(refused, events)} actions={recordingActions().actions} />,
    );
    const line = screen.getByRole("status", { name: "Delivery" });
    expect(line).toHaveTextContent(
      `Branch ${branch} at 0123456 pushed to origin; GitHub refused the token (401) for ada/app`,
    );
    expect(line).toHaveClass("bad");
    expect(screen.queryByRole("link", { name: "pull request" })).toBeNull();
  });
});

describe("TurnPanel tells the truth about how a turn stands", () => {
  const start = Date.UTC(2025, 0, 1);

  it("shows a turn stopped by a guard as stopped, not as a green Completed", () => {
    const turn = turnRecord({
      status: "completed",
      exitReason: "all_tools_duplicate",
      response: "I kept reading the same file.",
      finishedAt: new Date(start + 5_000),
    });
    const events = numbered([
      ["status", { message: "Pass 1", pass: 1 }],
      ["response", { message: "I kept reading the same file." }],
      ["done", { reason: "all_tools_duplicate", passes: 4, totalCost: 0.01 }],
    ]);
    const { container } = render(
      <TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />,
    );
    const status = container.querySelector(".status-line") as HTMLElement;
    expect(status).toHaveTextContent("Stopped by a guard: it repeated the same tool calls");
    expect(status).not.toHaveTextContent("Completed");
    expect(status.querySelector(".status-dot")).toHaveClass("status-guard");
    expect(screen.getByText(/Where it stood when the guard stopped it/)).toBeInTheDocument();
    expect(container.querySelector(".turn-stats")).toHaveTextContent(
      /^Stopped by a guard \(it repeated the same tool calls\)/,
    );
  });

  it("says once why a turn was interrupted, not Interrupted (interrupted: …)", () => {
    const turn = turnRecord({
      status: "interrupted",
      exitReason: "interrupted",
      finishedAt: new Date(start + 65_000),
    });
    const events = numbered([
      ["status", { message: "Pass 1", pass: 1 }],
      ["done", { reason: "interrupted", passes: 1, totalCost: 0 }],
    ]);
    const { container } = render(
      <TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />,
    );
    expect(container.querySelector(".turn-stats")).toHaveTextContent(
      /^Interrupted \(its drone went away\)/,
    );
    expect(container).not.toHaveTextContent(/interrupted:/i);
    expect(container).not.toHaveTextContent(/Interrupted \(interrupted/);
  });

  it("answers an ordinary completed turn as Completed, without a guard", () => {
    const turn = turnRecord({ status: "completed", exitReason: "completed", response: "Done." });
    const { container } = render(
      <TurnPanel snapshot={snapshot(turn, [], false)} actions={recordingActions().actions} />,
    );
    expect(container.querySelector(".status-line")).toHaveTextContent(/^Completed/);
  });

  it("drops the old error box once a resumed turn completes", () => {
    const turn = turnRecord({ status: "completed", exitReason: "completed", response: "Fixed." });
    const events = numbered([
      ["status", { message: "Pass 1", pass: 1 }],
      ["error", { code: "provider_unavailable", message: "The provider kept failing." }],
      ["done", { reason: "error", passes: 1, totalCost: 0 }],
      ["queued", { message: "Resumed; waiting for a drone" }],
      ["dispatched", { droneId: "d1", droneName: "laptop" }],
      ["status", { message: "Pass 2", pass: 2 }],
      ["response", { message: "Fixed." }],
      ["done", { reason: "completed", passes: 2, totalCost: 0 }],
    ]);
    render(<TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />);
    expect(screen.queryByRole("alert")).toBeNull();
    expect(screen.getByText("Fixed.")).toBeInTheDocument();
  });

  it("keeps the elapsed time ticking while a resumed turn starts again", () => {
    const turn = turnRecord({ status: "queued", startedAt: new Date(start), finishedAt: null });
    const events = [
      event(1, "status", { message: "Pass 1", pass: 1 }, start),
      event(2, "done", { reason: "interrupted", passes: 1, totalCost: 0 }, start + 10_000),
      event(3, "queued", { message: "Resumed; waiting for a drone" }, start + 60_000),
    ];
    const view = applyEvents(emptyTurnView(), events);
    const { container, rerender } = render(
      <StatusLine turn={turn} view={view} now={start + 70_000} />,
    );
    expect(container).toHaveTextContent("1m 10s");
    rerender(<StatusLine turn={turn} view={view} now={start + 95_000} />);
    expect(container).toHaveTextContent("1m 35s");
  });

  it("says a turn waits for the session's worktree, without the other turn's id", () => {
    const turn = turnRecord({ status: "processing" });
    const events = numbered([
      ["dispatched", { droneId: "d1", droneName: "laptop" }],
      [
        "status",
        {
          phase: "workspace",
          // What drones before this change said: the web IDE never shows the id.
          message: "Waiting for the session's worktree: turn 65f0aa11bb22cc33dd44ee55 is using it",
        },
      ],
    ]);
    const { container } = render(
      <TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />,
    );
    const status = container.querySelector(".status-line") as HTMLElement;
    expect(status).toHaveTextContent("Waiting for the session's worktree");
    expect(status).toHaveTextContent("another turn of this session is using it");
    expect(status).not.toHaveTextContent("Working");
    expect(container).not.toHaveTextContent("65f0aa11bb22cc33dd44ee55");
  });

  it("goes back to Working once the worktree is the turn's", () => {
    const turn = turnRecord({ status: "processing" });
    const events = numbered([
      ["status", { phase: "workspace", message: WAITING_FOR_WORKTREE }],
      ["status", { phase: "workspace", message: "New branch gadget/fix-1a2b3c" }],
    ]);
    const { container } = render(
      <TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />,
    );
    expect(container.querySelector(".status-word")).toHaveTextContent(/^Working$/);
  });

  it("separates the narration of different passes", () => {
    const turn = turnRecord({ status: "processing" });
    const events = numbered([
      ["status", { message: "Pass 1", pass: 1 }],
      ["token", { text: "Ran the tests and they all passed once tested." }],
      ["status", { message: "Pass 2", pass: 2 }],
      ["token", { text: "Found it: a typo in add." }],
    ]);
    const { container } = render(
      <TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />,
    );
    const paragraphs = [...container.querySelectorAll(".answer p")].map((p) => p.textContent);
    expect(paragraphs).toEqual([
      "Ran the tests and they all passed once tested.",
      "Found it: a typo in add.",
    ]);
  });

  it("does not show a stopped turn's pass-1 narration as its answer", () => {
    const turn = turnRecord({ status: "cancelled", exitReason: "cancelled" });
    const events = numbered([
      ["status", { message: "Pass 1", pass: 1 }],
      ["token", { text: "Let me look at the tests first." }],
      ["done", { reason: "cancelled", passes: 1, totalCost: 0 }],
    ]);
    const { container } = render(
      <TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />,
    );
    expect(container.querySelector(".answer")).toBeNull();
    const narration = container.querySelector("details.narration") as HTMLElement;
    expect(narration).toHaveTextContent("What the model said before the turn stopped");
    expect(narration).toHaveTextContent("(not an answer)");
    expect(narration).toHaveTextContent("Let me look at the tests first.");
  });

  it("shows an error as a titled box with the whole cause, its code on the same line", () => {
    const cause =
      "Could not clone https://git.example/ada/app.git: remote: Repository not found.\nfatal: repository 'https://git.example/ada/app.git/' not found";
    const turn = turnRecord({
      status: "failed",
      exitReason: "error",
      error: { code: "clone_failed", message: cause },
    });
    render(<TurnPanel snapshot={snapshot(turn, [], false)} actions={recordingActions().actions} />);
    const box = screen.getByRole("alert", { name: "Could not clone the project" });
    expect(box.querySelector(".error-title")).toHaveTextContent("Could not clone the project");
    const line = box.querySelector(".error-cause") as HTMLElement;
    expect(line.textContent).toBe(`${cause} clone_failed`);
    expect(line.querySelector("code")).toHaveTextContent("clone_failed");
  });

  it("shows — for the cost when the provider has no prices", () => {
    const turn = turnRecord({ status: "processing" });
    const events = numbered([
      [
        "cost_update",
        {
          totalCost: 0,
          tokens: { input: 1200, output: 300, reasoning: 0, cached: 0 },
          priced: false,
        },
      ],
    ]);
    const { container } = render(
      <TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />,
    );
    const cost = [...container.querySelectorAll(".meter")].find((meter) =>
      meter.textContent?.startsWith("Cost"),
    );
    expect(cost).toHaveTextContent(/^Cost—$/);
    expect(container).not.toHaveTextContent("$0.00");
  });

  it("says cost — in a past turn's stats when its provider had no prices", () => {
    const turn = turnRecord({
      status: "completed",
      exitReason: "completed",
      stats: { ...turnRecord().stats, priced: false, passes: 1 },
    });
    const { container } = render(
      <TurnPanel snapshot={snapshot(turn, [], false)} actions={recordingActions().actions} />,
    );
    expect(container.querySelector(".turn-stats")).toHaveTextContent("cost —");
    expect(container).not.toHaveTextContent("$0.00");
  });

  it("does not say it is thinking while it waits for an approval", () => {
    const turn = turnRecord({ status: "awaiting_approval" });
    const events = numbered([
      ["status", { message: "Pass 1", pass: 1 }],
      ["thinking", { text: "I should write the file." }],
      [
        "approval",
        {
          approvals: [
            { id: "a1", callId: "w1", tool: "write_file", params: {}, description: "Write a.txt" },
          ],
        },
      ],
    ]);
    render(<TurnPanel snapshot={snapshot(turn, events)} actions={recordingActions().actions} />);
    expect(screen.getByText(/^Reasoning/)).toHaveTextContent(/^Reasoning$/);
  });

  it("names the project in the session's breadcrumb", () => {
    render(
      <SessionHeader
        projectId="p1"
        projectName="calculator"
        session={undefined}
        onDelivered={() => {}}
      />,
    );
    expect(screen.getByRole("link", { name: "calculator" })).toHaveAttribute(
      "href",
      "/projects/p1",
    );
    expect(screen.queryByRole("link", { name: "Project" })).toBeNull();
  });
});

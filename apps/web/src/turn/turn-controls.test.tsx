// A queued turn shows its place and can be edited or removed; a finished turn offers Rewind and
// Fork; the messages a turn took while it ran show in it; the composer steers a running turn.
import type { ChatTurn, TurnEvent } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import type { TurnSnapshot } from "../live/turn-store.ts";
import { applyEvents, emptyTurnView } from "../live/turn-view.ts";
import { numbered, turnRecord } from "../test/events.ts";
import { render, screen, waitFor } from "../test/render.tsx";
import { Composer } from "./composer.tsx";
import { type TurnActions, TurnPanel } from "./turn-panel.tsx";

function snapshot(turn: ChatTurn, events: TurnEvent[] = []): TurnSnapshot {
  return { turn, view: applyEvents(emptyTurnView(), events), eventsLoaded: true, loadError: null };
}

function actions(calls: string[]): TurnActions {
  const record = (name: string) => async () => {
    calls.push(name);
  };
  return {
    cancel: record("cancel"),
    resume: record("resume"),
    decide: record("decide"),
    revert: async () => {
      throw new Error("not used");
    },
    loadEvents: () => undefined,
    edit: async (prompt) => {
      calls.push(`edit:${prompt}`);
    },
    rewind: record("rewind"),
    fork: record("fork"),
  };
}

describe("turn controls", () => {
  it("shows a queued turn's position, edits its prompt and removes it", async () => {
    const calls: string[] = [];
    const user = userEvent.setup();
    const turn = turnRecord({
      status: "queued",
      prompt: "Then add tests",
      waiting: { reason: "session_busy", position: 2 },
    });
    render(<TurnPanel snapshot={snapshot(turn)} actions={actions(calls)} />);
    expect(screen.getByText(/Queued · position 2/)).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Edit" }));
    const box = screen.getByRole("textbox", { name: /Queued prompt/ });
    await user.clear(box);
    // An empty prompt is refused on the field, before anything is sent.
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(box).toHaveAttribute("aria-invalid", "true"));
    expect(calls).toEqual([]);
    await user.type(box, "Then add more tests");
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(calls).toEqual(["edit:Then add more tests"]));
    await user.click(screen.getByRole("button", { name: "Remove" }));
    await waitFor(() => expect(calls).toContain("cancel"));
  });

  it("offers Rewind and Fork on a finished turn, and marks a rewound one", async () => {
    const calls: string[] = [];
    const user = userEvent.setup();
    const done = turnRecord({ status: "completed", response: "Done" });
    const { unmount } = render(<TurnPanel snapshot={snapshot(done)} actions={actions(calls)} />);
    await user.click(screen.getByRole("button", { name: "Rewind to here" }));
    await user.click(screen.getByRole("button", { name: "Fork from here" }));
    await waitFor(() => expect(calls).toEqual(["rewind", "fork"]));
    unmount();
    const rewound = turnRecord({ status: "completed", rewoundAt: new Date() });
    render(<TurnPanel snapshot={snapshot(rewound)} actions={actions(calls)} />);
    expect(screen.getByText("rewound")).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Rewind to here" })).toBeNull();
  });

  it("edits and resends the last prompt", async () => {
    const sent: string[] = [];
    const user = userEvent.setup();
    const done = turnRecord({ status: "completed", prompt: "Add a README" });
    render(
      <TurnPanel
        snapshot={snapshot(done)}
        actions={{
          ...actions([]),
          resend: async (prompt) => {
            sent.push(prompt);
          },
        }}
      />,
    );
    await user.click(screen.getByRole("button", { name: "Edit and resend" }));
    const box = screen.getByRole("textbox", { name: /Prompt to send again/ });
    await user.clear(box);
    await user.type(box, "Add a short README");
    await user.click(screen.getByRole("button", { name: "Rewind and send" }));
    await waitFor(() => expect(sent).toEqual(["Add a short README"]));
  });

  it("shows the messages the turn took while it ran", () => {
    const turn = turnRecord({ status: "processing" });
    const events = numbered([["user_message", { messageId: "m1", text: "Use tabs" }]]);
    render(<TurnPanel snapshot={snapshot(turn, events)} actions={actions([])} />);
    expect(screen.getByRole("list", { name: "Your messages to this turn" })).toHaveTextContent(
      "Use tabs",
    );
  });

  it("steers the running turn on Enter, interrupts on request, and queues on Alt+Enter", async () => {
    const steered: string[] = [];
    const queued: string[] = [];
    const user = userEvent.setup();
    render(
      <Composer
        providers={[
          {
            _id: "p1",
            name: "Local",
            baseUrl: "http://127.0.0.1:9/v1",
            modelId: "small",
            hasApiKey: true,
            quirks: [],
            createdAt: new Date(),
          },
        ]}
        drones={[]}
        onSend={async (submission) => {
          queued.push(submission.prompt);
        }}
        onSteer={async (text, interrupt) => {
          steered.push(`${interrupt ? "interrupt:" : ""}${text}`);
        }}
      />,
    );
    const box = screen.getByRole("textbox", { name: "Prompt" });
    expect(box).toHaveAttribute("placeholder", expect.stringContaining("Steer the running turn"));
    await user.type(box, "Use tabs{Enter}");
    await waitFor(() => expect(box).toHaveValue(""));
    await user.type(box, "Stop now");
    await user.click(screen.getByRole("button", { name: "Interrupt and steer" }));
    await waitFor(() => expect(box).toHaveValue(""));
    await user.type(box, "Afterwards, add docs{Alt>}{Enter}{/Alt}");
    await waitFor(() => expect(queued).toEqual(["Afterwards, add docs"]));
    expect(steered).toEqual(["Use tabs", "interrupt:Stop now"]);
  });
});

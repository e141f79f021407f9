// The composer: Enter sends, Shift+Enter adds a line, the chosen provider and drone go along.
import type { Drone, Provider } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/api-error.ts";
import { render, screen, waitFor } from "../test/render.tsx";
import { Composer, type ComposerSubmission } from "./composer.tsx";

const providers: Provider[] = [
  {
    _id: "p1",
    name: "Local",
    baseUrl: "http://127.0.0.1:9/v1",
    modelId: "small",
    hasApiKey: true,
    quirks: [],
    createdAt: new Date(),
  },
  {
    _id: "p2",
    name: "Cloud",
    baseUrl: "https://example.test/v1",
    modelId: "large",
    hasApiKey: true,
    quirks: [],
    createdAt: new Date(),
  },
];
const drones: Drone[] = [
  {
    _id: "d1",
    name: "laptop",
    status: "online",
    activeTurns: 0,
    capacity: 2,
    lastSeenAt: null,
    hostname: null,
    platform: null,
    version: null,
    sandbox: null,
    labels: [],
    ephemeral: false,
    outdated: false,
    updateRefused: null,
  },
];

function setup(onSend: (submission: ComposerSubmission) => Promise<void>) {
  const user = userEvent.setup();
  render(<Composer providers={providers} drones={drones} onSend={onSend} />);
  return { user, box: screen.getByRole("textbox", { name: "Prompt" }) };
}

describe("Composer", () => {
  it("sends on Enter with the chosen provider and drone, then clears the box", async () => {
    const sent: ComposerSubmission[] = [];
    const { user, box } = setup(async (submission) => {
      sent.push(submission);
    });
    await user.selectOptions(screen.getByRole("combobox", { name: /Provider/ }), "p2");
    await user.selectOptions(screen.getByRole("combobox", { name: /Drone/ }), "d1");
    await user.type(box, "Add a README{Enter}");
    expect(sent).toEqual([{ prompt: "Add a README", providerId: "p2", droneId: "d1" }]);
    await waitFor(() => expect(box).toHaveValue(""));
  });

  it("adds a new line on Shift+Enter instead of sending", async () => {
    const sent: ComposerSubmission[] = [];
    const { user, box } = setup(async (submission) => {
      sent.push(submission);
    });
    await user.type(box, "first line{Shift>}{Enter}{/Shift}second line");
    expect(box).toHaveValue("first line\nsecond line");
    expect(sent).toEqual([]);
    await user.type(box, "{Enter}");
    expect(sent).toEqual([{ prompt: "first line\nsecond line", providerId: "p1" }]);
  });

  it("does not send an empty prompt", async () => {
    const sent: ComposerSubmission[] = [];
    const { user, box } = setup(async (submission) => {
      sent.push(submission);
    });
    await user.type(box, "   {Enter}");
    expect(sent).toEqual([]);
    expect(screen.getByRole("button", { name: "Send" })).toBeDisabled();
  });

  it("passes limits when given", async () => {
    const sent: ComposerSubmission[] = [];
    const { user, box } = setup(async (submission) => {
      sent.push(submission);
    });
    await user.click(screen.getByText("Limits"));
    await user.type(screen.getByRole("textbox", { name: /Cost budget/ }), "0.5");
    await user.type(screen.getByRole("textbox", { name: /Max passes/ }), "8");
    await user.type(box, "Go{Enter}");
    expect(sent[0]?.limits).toEqual({ costBudget: 0.5, maxPasses: 8 });
  });

  it("keeps the text and says why when sending fails", async () => {
    const { user, box } = setup(async () => {
      throw new ApiError("no_drone_online", "No drone is online to run this turn.", 503);
    });
    await user.type(box, "Refactor{Enter}");
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "The prompt was not sent: No drone is online to run this turn.",
    );
    expect(box).toHaveValue("Refactor");
  });

  it("cannot send without a provider and says what to do", () => {
    render(
      <Composer
        providers={[]}
        drones={[]}
        onSend={async () => {}}
        disabled
        disabledReason="Add a provider first (Providers page)."
      />,
    );
    expect(screen.getByRole("button", { name: "Send" })).toBeDisabled();
    expect(screen.getByText("Add a provider first (Providers page).")).toBeInTheDocument();
  });

  it("keeps the focus in the prompt box after Send is clicked, ready for the next prompt", async () => {
    let release = () => {};
    const { user, box } = setup(
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
    );
    await user.type(box, "Write the docs");
    const sendButton = screen.getByRole("button", { name: "Send" });
    await user.click(sendButton);
    // While the prompt goes out, Send is disabled; the focus did not fall to <body>.
    expect(sendButton).toBeDisabled();
    expect(box).toHaveFocus();
    release();
    await waitFor(() => expect(box).toHaveValue(""));
    expect(box).toHaveFocus();
  });
});

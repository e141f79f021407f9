// Forge events on the project settings: turning them on with a trigger and label, the webhook URL
// and secret shown once, and the deliveries with what each did.
import type { ForgeEventDelivery, Project, UpdateProjectBody } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/api-error.ts";
import { render, screen, waitFor } from "../test/render.tsx";
import { ForgeEventsPanel } from "./forge-events-panel.tsx";

const project: Project = {
  _id: "p1",
  name: "App",
  slug: "app",
  gitUrl: "https://git.example.org/ada/app.git",
  defaultBranch: null,
  verifyCommands: [],
  network: "none",
  allowedHosts: [],
  branchPrefix: "gadget/",
  delivery: "pull-request",
  commitAuthor: null,
  forge: {
    kind: "gitea",
    apiUrl: "https://git.example.org/api/v1",
    hasToken: true,
    events: null,
    hasEventsSecret: false,
  },
  requires: [],
  mcpServers: [],
  envKeys: [],
  createdAt: new Date(),
};

const deliveries: ForgeEventDelivery[] = [
  {
    _id: "e2",
    deliveryId: "d2",
    event: "issue_comment",
    action: "created",
    sender: "mallory",
    number: 4,
    outcome: "ignored",
    reason: "@mallory has no write access to ada/app",
    sessionId: null,
    turnId: null,
    createdAt: new Date(),
  },
];

describe("forge events settings", () => {
  it("turns them on with the trigger and label, and saves them with the forge", async () => {
    const saved: UpdateProjectBody[] = [];
    render(
      <ForgeEventsPanel
        project={project}
        onSave={async (body) => void saved.push(body)}
        onMakeSecret={async () => ({ url: "", secret: "" })}
        deliveries={[]}
      />,
    );
    expect(screen.getByText("No deliveries yet.")).toBeInTheDocument();
    await userEvent.click(screen.getByRole("checkbox", { name: /start turns/ }));
    const label = screen.getByRole("textbox", { name: "Label that starts an issue's turn" });
    await userEvent.clear(label);
    await userEvent.type(label, "ai");
    await userEvent.click(screen.getByRole("button", { name: "Save forge events" }));
    expect(saved).toEqual([
      {
        forge: {
          kind: "gitea",
          apiUrl: "https://git.example.org/api/v1",
          events: {
            enabled: true,
            trigger: "@gadget",
            label: "ai",
            assignee: null,
            reviewFollowUps: true,
            checkFollowUps: false,
          },
        },
      },
    ]);
    // A trigger of two words is refused here, before anything is sent.
    const trigger = screen.getByRole("textbox", { name: "Trigger word in a comment" });
    await userEvent.type(trigger, " now");
    await userEvent.click(screen.getByRole("button", { name: "Save forge events" }));
    await waitFor(() => expect(trigger).toHaveAccessibleDescription(/must be one word/));
    expect(trigger).toHaveAttribute("aria-invalid", "true");
    expect(saved).toHaveLength(1);
  });

  it("puts the server's problem on the field it names", async () => {
    render(
      <ForgeEventsPanel
        project={project}
        onSave={async () => {
          throw new ApiError("validation_failed", "Invalid project", 400, [
            { path: "forge.events.label", message: "is taken by another project" },
          ]);
        }}
        onMakeSecret={async () => ({ url: "", secret: "" })}
        deliveries={[]}
      />,
    );
    await userEvent.click(screen.getByRole("button", { name: "Save forge events" }));
    const label = screen.getByRole("textbox", { name: "Label that starts an issue's turn" });
    await waitFor(() => expect(label).toHaveAccessibleDescription("is taken by another project"));
    expect(screen.getByRole("alert")).toHaveTextContent("Could not save forge events");
  });

  it("shows the webhook URL and secret once, and each delivery with what it did", async () => {
    render(
      <ForgeEventsPanel
        project={project}
        onSave={async () => undefined}
        onMakeSecret={async () => ({
          url: "https://gadget.example.org/api/forge-events/p1",
          secret: "gfe_secret",
        })}
        deliveries={deliveries}
      />,
    );
    expect(screen.getByRole("list", { name: "Forge deliveries" })).toHaveTextContent(
      "ignored issue_comment.created #4 by @mallory: @mallory has no write access to ada/app",
    );
    await userEvent.click(screen.getByRole("button", { name: "Make the webhook secret" }));
    expect(screen.getByTestId("forge-events-url")).toHaveTextContent(
      "https://gadget.example.org/api/forge-events/p1",
    );
    expect(screen.getByTestId("forge-events-secret")).toHaveTextContent("gfe_secret");
    await userEvent.click(screen.getByRole("button", { name: "I have copied them" }));
    expect(screen.queryByTestId("forge-events-secret")).toBeNull();
  });
});

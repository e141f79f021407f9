// The project settings form: the network policy and verification commands as the user sets them.
import type { Project, UpdateProjectBody } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/api-error.ts";
import { render, screen, waitFor } from "../test/render.tsx";
import { ProjectSettings } from "./project-settings.tsx";

const project: Project = {
  _id: "p1",
  name: "App",
  slug: "app",
  gitUrl: "https://example.com/app.git",
  defaultBranch: null,
  verifyCommands: ["npm test"],
  network: "none",
  allowedHosts: [],
  branchPrefix: "gadget/",
  delivery: "workspace",
  commitAuthor: null,
  forge: null,
  requires: [],
  mcpServers: [],
  envKeys: [],
  createdAt: new Date(),
};

describe("project settings", () => {
  it("shows the network policy, asks for hosts only for an allowlist, and saves one per line", async () => {
    const saved: UpdateProjectBody[] = [];
    render(<ProjectSettings project={project} onSave={async (body) => void saved.push(body)} />);
    const network = screen.getByRole("combobox", { name: /Network/ });
    expect(network).toHaveValue("none");
    expect(screen.queryByRole("textbox", { name: "Allowed hosts" })).toBeNull();

    await userEvent.selectOptions(network, "allowlist");
    const hosts = screen.getByRole("textbox", { name: "Allowed hosts" });
    await userEvent.type(hosts, "registry.npmjs.org{enter}{enter}  *.github.com  ");
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved).toEqual([
      {
        network: "allowlist",
        allowedHosts: ["registry.npmjs.org", "*.github.com"],
        verifyCommands: ["npm test"],
      },
    ]);
    expect(await screen.findByText(/the next turn uses them/)).toBeInTheDocument();
  });

  it("shows the branch prefix and saves it when changed", async () => {
    const saved: UpdateProjectBody[] = [];
    render(<ProjectSettings project={project} onSave={async (body) => void saved.push(body)} />);
    const prefix = screen.getByRole("textbox", { name: "Branch prefix" });
    expect(prefix).toHaveValue("gadget/");
    await userEvent.clear(prefix);
    await userEvent.type(prefix, "ai/");
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved).toEqual([
      { network: "none", allowedHosts: [], verifyCommands: ["npm test"], branchPrefix: "ai/" },
    ]);
  });

  it("saves the drone labels the project's turns require, separated by spaces", async () => {
    const saved: UpdateProjectBody[] = [];
    render(<ProjectSettings project={project} onSave={async (body) => void saved.push(body)} />);
    await userEvent.type(
      screen.getByRole("textbox", { name: "Required drone labels" }),
      "gpu  os=linux",
    );
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved).toEqual([
      {
        network: "none",
        allowedHosts: [],
        verifyCommands: ["npm test"],
        requires: ["gpu", "os=linux"],
      },
    ]);
  });

  it("saves the delivery and the commit author when changed", async () => {
    const saved: UpdateProjectBody[] = [];
    render(<ProjectSettings project={project} onSave={async (body) => void saved.push(body)} />);
    await userEvent.selectOptions(screen.getByRole("combobox", { name: "Delivery" }), "branch");
    await userEvent.type(screen.getByRole("textbox", { name: "Commit author name" }), "Ada");
    await userEvent.type(
      screen.getByRole("textbox", { name: "Commit author email" }),
      "ada@example.com",
    );
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved).toEqual([
      {
        network: "none",
        allowedHosts: [],
        verifyCommands: ["npm test"],
        delivery: "branch",
        commitAuthor: { name: "Ada", email: "ada@example.com" },
      },
    ]);
  });

  it("sets a self-hosted Gitea (or Forgejo) forge, whose API is under /api/v1", async () => {
    const saved: UpdateProjectBody[] = [];
    render(<ProjectSettings project={project} onSave={async (body) => void saved.push(body)} />);
    await userEvent.selectOptions(screen.getByRole("combobox", { name: "Forge" }), "gitea");
    const url = screen.getByRole("textbox", { name: "Forge API URL" });
    expect(url).toHaveValue("https://gitea.com/api/v1");
    await userEvent.clear(url);
    await userEvent.type(url, "https://git.example.org/api/v1");
    await userEvent.type(screen.getByLabelText("Forge token"), "gitea-secret");
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved.at(-1)?.forge).toEqual({
      kind: "gitea",
      apiUrl: "https://git.example.org/api/v1",
      token: "gitea-secret",
    });
  });

  it("sets a forge with its token, which is never shown again: only replaced or removed", async () => {
    const saved: UpdateProjectBody[] = [];
    const { unmount } = render(
      <ProjectSettings project={project} onSave={async (body) => void saved.push(body)} />,
    );
    await userEvent.selectOptions(screen.getByRole("combobox", { name: "Forge" }), "gitlab");
    // The public service's API is filled in; a self-hosted one is typed over it.
    expect(screen.getByRole("textbox", { name: "Forge API URL" })).toHaveValue(
      "https://gitlab.com/api/v4",
    );
    const token = screen.getByLabelText("Forge token");
    expect(token).toHaveAttribute("type", "password");
    await userEvent.type(token, "glpat-secret");
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved.at(-1)).toEqual({
      network: "none",
      allowedHosts: [],
      verifyCommands: ["npm test"],
      forge: { kind: "gitlab", apiUrl: "https://gitlab.com/api/v4", token: "glpat-secret" },
    });
    unmount();

    // As the server answers it: the token set, never its value.
    const withForge: Project = {
      ...project,
      forge: {
        kind: "github",
        apiUrl: "https://api.github.com",
        hasToken: true,
        events: null,
        hasEventsSecret: false,
      },
    };
    const second = render(
      <ProjectSettings project={withForge} onSave={async (body) => void saved.push(body)} />,
    );
    expect(screen.getByRole("status", { name: "Forge token" })).toHaveTextContent("Token set");
    expect(screen.queryByLabelText("Forge token", { selector: "input" })).toBeNull();
    // Saving other settings leaves the forge as it is.
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved.at(-1)).not.toHaveProperty("forge");
    await userEvent.click(screen.getByRole("button", { name: "Replace token" }));
    await userEvent.type(screen.getByLabelText("Forge token"), "ghp_new");
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved.at(-1)?.forge).toEqual({
      kind: "github",
      apiUrl: "https://api.github.com",
      token: "ghp_new",
    });
    second.unmount();

    render(<ProjectSettings project={withForge} onSave={async (body) => void saved.push(body)} />);
    await userEvent.click(screen.getByRole("button", { name: "Remove forge" }));
    expect(screen.getByText(/removed when you save/)).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved.at(-1)?.forge).toBeNull();
  });

  it("shows the server's refusal, with its problem on the field that is wrong", async () => {
    render(
      <ProjectSettings
        project={{ ...project, network: "allowlist", allowedHosts: ["registry.npmjs.org"] }}
        onSave={async () => {
          throw new ApiError("validation_failed", "Invalid project", 400, [
            { path: "allowedHosts.0", message: "must be a host name" },
          ]);
        }}
      />,
    );
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("allowedHosts.0");
    expect(alert).toHaveTextContent("must be a host name");
    expect(screen.getByRole("textbox", { name: "Allowed hosts" })).toHaveAccessibleDescription(
      "must be a host name",
    );
  });

  it("says what is wrong with a host on its field before sending anything", async () => {
    const saved: UpdateProjectBody[] = [];
    render(
      <ProjectSettings
        project={{ ...project, network: "allowlist" }}
        onSave={async (body) => void saved.push(body)}
      />,
    );
    await userEvent.type(screen.getByRole("textbox", { name: "Allowed hosts" }), "bad host");
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    const hosts = screen.getByRole("textbox", { name: "Allowed hosts" });
    await waitFor(() => expect(hosts).toHaveAttribute("aria-invalid", "true"));
    expect(hosts).toHaveAccessibleDescription(/host/);
    expect(saved).toEqual([]);
  });
});

// MCP servers in the project settings: added as a command line or a URL, env values and bearer
// tokens write-only (stored ones show only their names), removed, saved as the whole list.
import type { Project, UpdateProjectBody } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { render, screen, within } from "../test/render.tsx";
import { joinCommandLine, splitCommandLine } from "./mcp-servers-editor.tsx";
import { ProjectSettings } from "./project-settings.tsx";

const project: Project = {
  _id: "p1",
  name: "App",
  slug: "app",
  gitUrl: "https://example.com/app.git",
  defaultBranch: null,
  verifyCommands: [],
  network: "none",
  allowedHosts: [],
  branchPrefix: "gadget/",
  delivery: "workspace",
  commitAuthor: null,
  forge: null,
  mcpServers: [],
  envKeys: [],
  requires: [],
  createdAt: new Date(),
};

describe("the command line of a stdio MCP server", () => {
  it("splits on spaces, keeps quoted words together and joins back", () => {
    expect(splitCommandLine(`  npx -y "@scope/server x" --dir 'a b' c\\ d ''`)).toEqual([
      "npx",
      "-y",
      "@scope/server x",
      "--dir",
      "a b",
      "c d",
      "",
    ]);
    const args = ["node", "server.mjs", "--name", "it's mine", "plain"];
    expect(splitCommandLine(joinCommandLine(args))).toEqual(args);
  });
});

describe("MCP servers in the project settings", () => {
  it("adds a stdio server and a remote one, and sends their secrets only when typed", async () => {
    const saved: UpdateProjectBody[] = [];
    render(<ProjectSettings project={project} onSave={async (body) => void saved.push(body)} />);
    // Nothing changed: the list is not sent.
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved.at(-1)).not.toHaveProperty("mcpServers");

    await userEvent.click(screen.getByRole("button", { name: "Add MCP server" }));
    let group = screen.getByRole("group", { name: "MCP server server 1" });
    await userEvent.type(within(group).getByRole("textbox", { name: "Server name" }), "github");
    group = screen.getByRole("group", { name: "MCP server github" });
    await userEvent.type(
      within(group).getByRole("textbox", { name: "Command" }),
      'node "tools/gh server.mjs" --stdio',
    );
    await userEvent.type(
      within(group).getByRole("textbox", { name: "Environment" }),
      "GITHUB_TOKEN=ghp_secret=1{enter}LOG_LEVEL=warn",
    );
    await userEvent.type(within(group).getByRole("textbox", { name: "Tools offered" }), "a, b");

    await userEvent.click(screen.getByRole("button", { name: "Add MCP server" }));
    group = screen.getByRole("group", { name: "MCP server server 2" });
    await userEvent.type(within(group).getByRole("textbox", { name: "Server name" }), "docs");
    group = screen.getByRole("group", { name: "MCP server docs" });
    await userEvent.selectOptions(within(group).getByRole("combobox"), "url");
    await userEvent.type(
      within(group).getByRole("textbox", { name: "URL" }),
      "https://mcp.example.com/mcp",
    );
    await userEvent.type(within(group).getByLabelText("Bearer token"), "tok-1234");
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved.at(-1)?.mcpServers).toEqual([
      {
        name: "github",
        command: ["node", "tools/gh server.mjs", "--stdio"],
        env: { GITHUB_TOKEN: "ghp_secret=1", LOG_LEVEL: "warn" },
        tools: ["a", "b"],
      },
      { name: "docs", url: "https://mcp.example.com/mcp", bearerToken: "tok-1234" },
    ]);
    // Saved values are not shown again: only the names, and the token as set.
    expect(screen.queryByDisplayValue(/ghp_secret/)).toBeNull();
    expect(screen.getByRole("button", { name: "Remove GITHUB_TOKEN" })).toBeInTheDocument();
    expect(screen.getByText("Bearer token set")).toBeInTheDocument();
    expect(screen.getByLabelText("Bearer token")).toHaveValue("");
  });

  it("names every field with a visible label, not only a placeholder", async () => {
    render(<ProjectSettings project={project} onSave={async () => {}} />);
    await userEvent.click(screen.getByRole("button", { name: "Add MCP server" }));
    const group = screen.getByRole("group", { name: "MCP server server 1" });
    const shown = (name: string) => {
      const label = within(group).getByText(name, { selector: "label" });
      expect(label).toBeVisible();
      return label;
    };
    for (const name of ["Server name", "Server kind", "Command", "Environment", "Tools offered"]) {
      shown(name);
    }
    for (const control of group.querySelectorAll("input, select, textarea")) {
      expect(control).not.toHaveAttribute("aria-label");
    }
    await userEvent.selectOptions(
      within(group).getByRole("combobox", { name: "Server kind" }),
      "url",
    );
    shown("URL");
    shown("Bearer token");
  });

  it("keeps stored secrets unless removed, and removes a server", async () => {
    const saved: UpdateProjectBody[] = [];
    const stored: Project = {
      ...project,
      mcpServers: [
        {
          name: "github",
          command: ["node", "gh.mjs"],
          envKeys: ["GITHUB_TOKEN", "OLD"],
          hasBearerToken: false,
        },
        { name: "docs", url: "https://mcp.example.com/mcp", envKeys: [], hasBearerToken: true },
        { name: "gone", command: ["x"], envKeys: [], hasBearerToken: false },
      ],
    };
    render(<ProjectSettings project={stored} onSave={async (body) => void saved.push(body)} />);
    const github = screen.getByRole("group", { name: "MCP server github" });
    expect(within(github).getByRole("textbox", { name: "Command" })).toHaveValue("node gh.mjs");
    await userEvent.click(screen.getByRole("button", { name: "Remove OLD" }));
    await userEvent.click(screen.getByRole("button", { name: "Remove gone" }));
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved.at(-1)?.mcpServers).toEqual([
      { name: "github", command: ["node", "gh.mjs"], env: { GITHUB_TOKEN: null } },
      { name: "docs", url: "https://mcp.example.com/mcp" },
    ]);
    await userEvent.click(screen.getByRole("button", { name: "Remove token" }));
    await userEvent.click(screen.getByRole("button", { name: "Save settings" }));
    expect(saved.at(-1)?.mcpServers?.[1]).toEqual({
      name: "docs",
      url: "https://mcp.example.com/mcp",
      bearerToken: null,
    });
  });
});

describe("what the MCP form says about a command", () => {
  it("gives an example and help that work with the project's network, and warns of what cannot work in the sandbox", async () => {
    render(<ProjectSettings project={project} onSave={async () => {}} />);
    await userEvent.click(screen.getByRole("button", { name: "Add MCP server" }));
    const group = screen.getByRole("group", { name: "MCP server server 1" });
    const command = within(group).getByRole("textbox", { name: "Command" });
    // No network: the example runs without one, and the help says why npx cannot.
    expect(command.getAttribute("placeholder")).not.toContain("npx");
    expect(command).toHaveAccessibleDescription(/No network: `npx -y …` cannot download a server/);
    expect(within(group).queryAllByRole("note")).toHaveLength(0);

    await userEvent.type(command, "npx -y @modelcontextprotocol/server-memory");
    const warnings = within(group)
      .getAllByRole("note")
      .map((note) => note.textContent);
    expect(warnings).toEqual([
      expect.stringContaining(
        "npx downloads the server when it starts, and this project has no network",
      ),
      expect.stringContaining("set MEMORY_FILE_PATH to an absolute path"),
    ]);
    // Its data file named: that warning goes.
    await userEvent.type(
      within(group).getByRole("textbox", { name: "Environment" }),
      "MEMORY_FILE_PATH=/work/memory.jsonl",
    );
    expect(within(group).getAllByRole("note")).toHaveLength(1);

    await userEvent.clear(command);
    await userEvent.type(command, "node /tmp/servers/index.js");
    expect(within(group).getByRole("note").textContent).toContain(
      "/tmp/servers/index.js is outside what the sandbox shows",
    );

    // With the whole network, npx is the example and works.
    await userEvent.selectOptions(
      screen.getByRole("combobox", { name: "Network for the agent's commands" }),
      "open",
    );
    expect(command.getAttribute("placeholder")).toBe("npx -y @modelcontextprotocol/server-memory");
  });
});

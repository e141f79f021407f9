// A newcomer's first run against a fake REST server: the empty Activity page lists what is left
// (provider, project, session, prompt), each step checked from what the API answers and linking
// to where it is done; a saved provider is checked at once; a new project and a new session open.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import userEvent from "@testing-library/user-event";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { App } from "../app/app.tsx";
import { render, screen, waitFor, within } from "../test/render.tsx";

let server: Server;
let baseUrl: string;
const seen: { method: string; url: string; body: string }[] = [];
const now = new Date().toISOString();

/** What the fake server holds; each test sets it. */
const state = {
  providers: [] as unknown[],
  projects: [] as unknown[],
  sessions: [] as unknown[],
  /** Whether a drone checked a new project's URL. */
  urlChecked: true,
};

const provider = {
  _id: "pr1",
  name: "Router",
  baseUrl: "https://api.example.com/v1",
  hasApiKey: true,
  modelId: "m1",
  params: {},
  quirks: [],
  createdAt: now,
};
const project = {
  _id: "p1",
  name: "calculator",
  slug: "calculator",
  gitUrl: "https://example.com/calc.git",
  defaultBranch: "main",
  verifyCommands: [],
  network: "isolated",
  allowedHosts: [],
  branchPrefix: "gadget/",
  delivery: "branch",
  commitAuthor: null,
  forge: null,
  requires: [],
  mcpServers: [],
  envKeys: [],
  createdAt: now,
};
const session = {
  _id: "s1",
  project: "p1",
  name: "Docs",
  mode: "code",
  approval: "on-write",
  allowedCommands: [],
  autoResume: "same-drone",
  createdAt: now,
};

function answer(method: string, path: string): [number, unknown] {
  if (path === "/api/turns/summary") return [200, { running: 0, awaitingApproval: 0, queued: 0 }];
  if (path === "/api/turns") return [200, { turns: [], nextCursor: null }];
  if (path === "/api/drones") return [200, { drones: [], nextCursor: null }];
  if (path === "/api/providers" && method === "GET") {
    return [200, { providers: state.providers, nextCursor: null }];
  }
  if (path === "/api/providers" && method === "POST") return [201, { provider }];
  if (path === "/api/providers/pr1/check" && method === "POST") {
    return [
      200,
      {
        ok: false,
        models: [],
        via: "server",
        message: "HTTP 401: invalid API key",
      },
    ];
  }
  if (path === "/api/projects" && method === "GET") {
    return [200, { projects: state.projects, nextCursor: null }];
  }
  if (path === "/api/projects" && method === "POST") {
    return [
      201,
      {
        project,
        gitUrlCheck: state.urlChecked
          ? { checked: true, drone: "laptop", defaultBranch: "main", message: "Reachable" }
          : { checked: false, message: "No drone of yours is online to check the URL" },
      },
    ];
  }
  if (path === "/api/projects/p1/sessions" && method === "GET") {
    return [200, { sessions: state.sessions, nextCursor: null }];
  }
  if (path === "/api/projects/p1/sessions" && method === "POST") return [201, { session }];
  return [404, { error: { code: "not_found", message: "Not found" } }];
}

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      const url = new URL(request.url ?? "/", "http://localhost");
      const method = request.method ?? "";
      seen.push({ method, url: url.pathname, body });
      const [status, value] = answer(method, url.pathname);
      response.statusCode = status;
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify(value));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  seen.length = 0;
  state.providers = [];
  state.projects = [];
  state.sessions = [];
  state.urlChecked = true;
  localStorage.clear();
  localStorage.setItem("gadget.token", "token-1");
  localStorage.setItem(
    "gadget.user",
    JSON.stringify({ _id: "u1", email: "ada@example.test", name: "Ada", createdAt: now }),
  );
  window.history.replaceState(null, "", "/");
});

const stepNamed = (list: HTMLElement, text: RegExp) =>
  within(list)
    .getAllByRole("listitem")
    .find((item) => text.test(item.textContent ?? "")) as HTMLElement;

describe("first run", () => {
  it("lists every step as to do for a new user, the provider first, each linking to its page", async () => {
    render(<App baseUrl={baseUrl} />);
    const checklist = await screen.findByRole("region", { name: "Get started" });
    const steps = within(checklist).getByRole("list");
    const items = within(steps).getAllByRole("listitem");
    expect(items.map((item) => item.textContent)).toEqual([
      expect.stringMatching(/^○ Add a model provider \(to do\) — open Providers$/),
      expect.stringMatching(/^○ Add a project .*\(to do\) — open Projects$/),
      expect.stringMatching(/^○ Start a session .*\(to do\) — open Projects$/),
      expect.stringMatching(/^○ Send a prompt .*\(to do\) — open a session$/),
    ]);
    expect(items[0]).toHaveAttribute("aria-current", "step");
    expect(within(items[0]!).getByRole("link", { name: "open Providers" })).toHaveAttribute(
      "href",
      "/providers",
    );
  });

  it("checks the steps the API says are done and links the next ones to the project and session", async () => {
    state.providers = [provider];
    state.projects = [project];
    render(<App baseUrl={baseUrl} />);
    const checklist = await screen.findByRole("region", { name: "Get started" });
    const steps = within(checklist).getByRole("list");
    await waitFor(() =>
      expect(stepNamed(steps, /project/)).toHaveTextContent(
        "✓ Add a project (a git repository) (done)",
      ),
    );
    expect(stepNamed(steps, /provider/)).toHaveTextContent("✓ Add a model provider (done)");
    const sessionStep = stepNamed(steps, /session in/);
    expect(sessionStep).toHaveAttribute("aria-current", "step");
    expect(within(sessionStep).getByRole("link", { name: "open calculator" })).toHaveAttribute(
      "href",
      "/projects/p1",
    );
  });

  it("links the prompt step to the session once one exists", async () => {
    state.providers = [provider];
    state.projects = [project];
    state.sessions = [session];
    render(<App baseUrl={baseUrl} />);
    const checklist = await screen.findByRole("region", { name: "Get started" });
    const link = await within(checklist).findByRole("link", { name: "open Docs" });
    expect(link).toHaveAttribute("href", "/projects/p1/sessions/s1");
    expect(stepNamed(within(checklist).getByRole("list"), /session in/)).toHaveTextContent(
      "(done)",
    );
  });

  it("checks a provider as soon as it is saved and shows what the check found", async () => {
    window.history.replaceState(null, "", "/providers");
    render(<App baseUrl={baseUrl} />);
    const form = await screen.findByRole("form", { name: "Add a provider" });
    await userEvent.type(within(form).getByLabelText("Name"), "Router");
    await userEvent.type(within(form).getByLabelText("Base URL"), "https://api.example.com/v1");
    await userEvent.type(within(form).getByLabelText("Model"), "m1");
    await userEvent.type(within(form).getByLabelText("API key"), "sk-bad");
    await userEvent.click(within(form).getByRole("button", { name: "Add provider" }));
    const result = await screen.findByRole("region", { name: "Check after saving" });
    expect(within(result).getByRole("alert")).toHaveTextContent(
      "The provider did not answer as expected (checked from the server: no drone of yours is online): HTTP 401: invalid API key",
    );
    expect(seen.map((request) => `${request.method} ${request.url}`)).toContain(
      "POST /api/providers/pr1/check",
    );
  });

  it("opens a new project once a drone checked its URL", async () => {
    window.history.replaceState(null, "", "/projects");
    render(<App baseUrl={baseUrl} />);
    const form = await screen.findByRole("form", { name: "Add a project" });
    await userEvent.type(within(form).getByLabelText("Name"), "calculator");
    await userEvent.type(within(form).getByLabelText("Git URL"), "https://example.com/calc.git");
    await userEvent.click(within(form).getByRole("button", { name: "Add project" }));
    await waitFor(() => expect(window.location.pathname).toBe("/projects/p1"));
  });

  it("stays to say why a new project's URL was not checked", async () => {
    state.urlChecked = false;
    window.history.replaceState(null, "", "/projects");
    render(<App baseUrl={baseUrl} />);
    const form = await screen.findByRole("form", { name: "Add a project" });
    await userEvent.type(within(form).getByLabelText("Name"), "calculator");
    await userEvent.type(within(form).getByLabelText("Git URL"), "https://example.com/calc.git");
    await userEvent.click(within(form).getByRole("button", { name: "Add project" }));
    expect(await within(form).findByRole("status")).toHaveTextContent(
      "No drone of yours is online to check the URL",
    );
    expect(window.location.pathname).toBe("/projects");
  });

  it("opens a new session once created", async () => {
    state.projects = [project];
    window.history.replaceState(null, "", "/projects/p1");
    render(<App baseUrl={baseUrl} />);
    const form = await screen.findByRole("form", { name: "New session" });
    await userEvent.type(within(form).getByLabelText("Session name"), "Docs");
    await userEvent.click(within(form).getByRole("button", { name: "New session" }));
    await waitFor(() => expect(window.location.pathname).toBe("/projects/p1/sessions/s1"));
  });
});

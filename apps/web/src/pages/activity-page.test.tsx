// The Activity page as the home page after login, against a fake REST server: live turns first
// (running with pass, tool and elapsed; an approval decided in place; why a queued one waits),
// then finished ones with outcome, cost, changes and duration; the filters' queries; the counts
// in the top bar, the tab title and the favicon.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ActivityTurn } from "@gadget/protocol";
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { App } from "../app/app.tsx";

let server: Server;
let baseUrl: string;
const seen: { method: string; url: string; body: string }[] = [];

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

function turn(id: string, fields: Partial<ActivityTurn>): ActivityTurn {
  return {
    _id: id,
    session: "s1",
    user: "u1",
    drone: "d1",
    provider: "pr1",
    llm: "scripted",
    mode: "code",
    prompt: `prompt of ${id}`,
    status: "processing",
    error: null,
    exitReason: null,
    stats: {
      toolCallCount: 0,
      inputTokens: 0,
      thinkingTokenCount: 0,
      responseTokens: 0,
      durationMs: 0,
      durationLabel: "pending",
      passes: 0,
      cost: 0,
    },
    changes: [],
    createdAt: new Date(minutesAgo(1)),
    startedAt: new Date(minutesAgo(1)),
    finishedAt: null,
    project: "p1",
    projectName: "calculator",
    sessionName: "Docs",
    droneName: "laptop",
    ...fields,
  } as ActivityTurn;
}

const live = [
  turn("t1", {
    prompt: "Add a usage section",
    status: "processing",
    startedAt: new Date(minutesAgo(2)),
    activity: {
      seq: 9,
      at: new Date(),
      pass: 3,
      tool: { name: "run_command", callId: "c1", startedAt: new Date() },
    },
  }),
  turn("t2", {
    prompt: "Rewrite the parser",
    status: "awaiting_approval",
    projectName: "compiler",
    project: "p2",
    sessionName: "Parser",
    activity: {
      seq: 4,
      at: new Date(),
      approvals: [{ id: "ap1", tool: "write_file", description: "Write src/parser.ts" }],
    },
  }),
  turn("t3", {
    prompt: "Bump the version",
    status: "queued",
    drone: null,
    droneName: null,
    startedAt: null,
    queuedReason: "Your drones are busy (2 of 2 turns running)",
  }),
];
const finished = [
  turn("t4", {
    prompt: "Fix the flaky test",
    status: "completed",
    exitReason: "completed",
    stats: { ...live[0]!.stats, cost: 0.0412 },
    changes: [
      { path: "a.ts", status: "modified" },
      { path: "b.ts", status: "added" },
    ],
    // Made apart, so "newest first" has one answer (the default is made when each row is).
    createdAt: new Date(minutesAgo(30)),
    startedAt: new Date(minutesAgo(30)),
    finishedAt: new Date(Date.now() - 30 * 60_000 + 75_000),
  }),
  turn("t5", {
    prompt: "Loop forever",
    status: "completed",
    exitReason: "all_tools_duplicate",
    createdAt: new Date(minutesAgo(50)),
    startedAt: new Date(minutesAgo(50)),
    finishedAt: new Date(minutesAgo(49)),
  }),
];

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      const url = new URL(request.url ?? "/", "http://localhost");
      seen.push({ method: request.method ?? "", url: `${url.pathname}${url.search}`, body });
      response.setHeader("content-type", "application/json");
      const send = (value: unknown) => response.end(JSON.stringify(value));
      if (url.pathname === "/api/turns/summary") {
        return send({ running: 1, awaitingApproval: 1, queued: 1 });
      }
      if (url.pathname === "/api/turns") {
        const statuses = (url.searchParams.get("status") ?? "").split(",");
        const all = [...live, ...finished].filter((item) => statuses.includes(item.status));
        return send({ turns: all, nextCursor: null });
      }
      if (url.pathname === "/api/turns/t2/approvals/ap1") return send({ ok: true });
      if (url.pathname === "/api/projects") {
        return send({
          projects: [
            {
              _id: "p1",
              name: "calculator",
              slug: "calculator",
              gitUrl: "x",
              createdAt: minutesAgo(9),
            },
            {
              _id: "p2",
              name: "compiler",
              slug: "compiler",
              gitUrl: "y",
              createdAt: minutesAgo(9),
            },
          ],
          nextCursor: null,
        });
      }
      if (url.pathname === "/api/drones") return send({ drones: [], nextCursor: null });
      response.statusCode = 404;
      send({ error: { code: "not_found", message: "Not found" } });
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
  localStorage.clear();
  localStorage.setItem("gadget.token", "token-1");
  localStorage.setItem(
    "gadget.user",
    JSON.stringify({
      _id: "u1",
      email: "ada@example.test",
      name: "Ada",
      createdAt: minutesAgo(99),
    }),
  );
  document.head.innerHTML =
    '<link rel="icon" href="/favicon.svg" type="image/svg+xml" /><title>Gadget Code</title>';
  window.history.replaceState(null, "", "/");
});

const rowOf = (id: string) => document.querySelector(`[data-turn-id="${id}"]`) as HTMLElement;

describe("Activity page", () => {
  it("shows live turns first, each as it is, then finished ones with outcome, cost, changes and duration", async () => {
    render(<App baseUrl={baseUrl} />);
    expect(await screen.findByRole("heading", { name: "Activity" })).toBeInTheDocument();
    const liveList = await screen.findByRole("region", { name: "Live turns" });
    const order = [...liveList.querySelectorAll("[data-turn-id]")].map((row) =>
      row.getAttribute("data-turn-id"),
    );
    expect(order).toEqual(["t1", "t2", "t3"]);
    expect(rowOf("t1")).toHaveTextContent(
      /Running.*calculator \/ Docs.*Add a usage section.*pass 3.*run_command.*2m 0\ds.*laptop/,
    );
    expect(within(rowOf("t1")).getByRole("link", { name: /calculator/ })).toHaveAttribute(
      "href",
      "/projects/p1/sessions/s1",
    );
    expect(rowOf("t2")).toHaveTextContent(
      /Needs approval.*compiler \/ Parser.*write_file Write src\/parser\.ts/,
    );
    expect(rowOf("t3")).toHaveTextContent(/Queued.*Your drones are busy \(2 of 2 turns running\)/);

    const done = screen.getByRole("region", { name: "Finished turns" });
    expect(
      [...done.querySelectorAll("[data-turn-id]")].map((row) => row.getAttribute("data-turn-id")),
    ).toEqual(["t4", "t5"]);
    expect(rowOf("t4")).toHaveTextContent(/Completed.*\$0\.0412.*2 files changed.*1m 15s/);
    // A turn its guard stopped does not read as answered; an unknown cost is not "$0.00".
    expect(rowOf("t5")).toHaveTextContent(/stopped: repeated calls.*—.*no files changed.*1m 00s/);
  });

  it("approves in place, through the approval API", async () => {
    render(<App baseUrl={baseUrl} />);
    const card = await screen.findByRole("group", { name: "Approval for write_file" });
    await userEvent.click(within(card).getByRole("button", { name: "Approve" }));
    await waitFor(() =>
      expect(seen).toContainEqual(
        expect.objectContaining({
          method: "POST",
          url: "/api/turns/t2/approvals/ap1",
          body: JSON.stringify({ approve: true }),
        }),
      ),
    );
    // The decided approval leaves the row.
    await waitFor(() =>
      expect(screen.queryByRole("group", { name: "Approval for write_file" })).toBeNull(),
    );
  });

  it("asks the server for what the filters say", async () => {
    render(<App baseUrl={baseUrl} />);
    await screen.findByRole("region", { name: "Live turns" });
    // The filter's choices are the user's projects, read beside the turns.
    await screen.findByRole("option", { name: "compiler" });
    await userEvent.selectOptions(screen.getByLabelText("Project"), "p2");
    await userEvent.selectOptions(screen.getByLabelText("Status"), "failed");
    await waitFor(() =>
      expect(seen.map((request) => request.url)).toContain(
        "/api/turns?status=failed&project=p2&limit=50",
      ),
    );
    expect(
      await screen.findByText("No turns match these filters.", { exact: false }),
    ).toBeInTheDocument();
  });

  it("shows the counts in the top bar, (N) in the tab title and a dot on the favicon; old links still work", async () => {
    window.history.replaceState(null, "", "/projects");
    render(<App baseUrl={baseUrl} />);
    const counts = await screen.findByRole("link", { name: /Your turns:/ });
    expect(counts).toHaveTextContent("1 running · 1 needs you · 1 queued");
    expect(screen.getByRole("heading", { name: "Projects" })).toBeInTheDocument();
    await waitFor(() => expect(document.title).toBe("(1) Gadget Code"));
    const icon = document.querySelector('link[rel="icon"]') as HTMLLinkElement;
    expect(icon.dataset.running).toBe("true");
    expect(decodeURIComponent(icon.href)).toContain('<circle cx="25"');
    await userEvent.click(counts);
    expect(window.location.pathname).toBe("/");
    expect(await screen.findByRole("heading", { name: "Activity" })).toBeInTheDocument();
  });
});

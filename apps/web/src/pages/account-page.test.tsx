// The account page against a small HTTP server: the user's sign-ins, revoking another one, and
// revoking this browser's own, which logs it out.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { SignIn } from "@gadget/protocol";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { App } from "../app/app.tsx";

const hour = 3_600_000;
const day = 24 * hour;

let server: Server;
let baseUrl: string;
let signIns: SignIn[];
const seen: { method: string; path: string; authorization?: string }[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://localhost").pathname;
    seen.push({ method: request.method ?? "", path, authorization: request.headers.authorization });
    response.setHeader("content-type", "application/json");
    if (request.method === "GET" && path === "/api/auth/sign-ins") {
      response.end(JSON.stringify({ signIns }));
      return;
    }
    const revoked = /^\/api\/auth\/sign-ins\/(\w+)$/.exec(path)?.[1];
    if (request.method === "DELETE" && revoked && signIns.some((item) => item.id === revoked)) {
      signIns = signIns.filter((item) => item.id !== revoked);
      response.statusCode = 204;
      response.end();
      return;
    }
    response.statusCode = 404;
    response.end(JSON.stringify({ error: { code: "not_found", message: "Sign-in not found" } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  const now = Date.now();
  signIns = [
    {
      id: "laptop",
      createdAt: new Date(now - 5 * 60_000),
      lastUsedAt: new Date(now - 5 * 60_000),
      expiresAt: new Date(now + 30 * day),
      current: true,
      device: "Firefox on macOS",
    },
    {
      id: "script",
      createdAt: new Date(now - 3 * hour),
      lastUsedAt: null,
      expiresAt: new Date(now + 12 * day),
      current: false,
      device: null,
    },
  ];
  seen.length = 0;
  localStorage.clear();
  localStorage.setItem("gadget.token", "token-laptop");
  localStorage.setItem(
    "gadget.user",
    JSON.stringify({ _id: "u1", email: "ada@example.test", name: "Ada", createdAt: new Date() }),
  );
  window.history.replaceState(null, "", "/projects");
});

describe("account page", () => {
  it("is reached from the top bar and lists each sign-in: device, made, last used, expires, this browser", async () => {
    render(<App baseUrl={baseUrl} />);
    await userEvent.click(screen.getByRole("link", { name: "Ada" }));
    expect(window.location.pathname).toBe("/account");
    expect(await screen.findByText("ada@example.test", { exact: false })).toBeInTheDocument();
    const table = await screen.findByRole("table");
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toHaveTextContent(
      /^Firefox on macOS.*5 min ago.*this browser.*5 min ago.*in 30 days/,
    );
    expect(rows[1]).toHaveTextContent(/^unknown browser or program.*3 h ago.*never.*in 12 days/);
    expect(rows[1]).not.toHaveTextContent("this browser");
    expect(seen).toContainEqual({
      method: "GET",
      path: "/api/auth/sign-ins",
      authorization: "Bearer token-laptop",
    });
  });

  it("revokes another sign-in: the server is told and its row goes", async () => {
    window.history.replaceState(null, "", "/account");
    render(<App baseUrl={baseUrl} />);
    const table = await screen.findByRole("table");
    const script = within(table).getAllByRole("row")[2] as HTMLElement;
    await userEvent.click(within(script).getByRole("button", { name: "Revoke" }));
    await waitForRows(1);
    expect(seen).toContainEqual({
      method: "DELETE",
      path: "/api/auth/sign-ins/script",
      authorization: "Bearer token-laptop",
    });
    // Still logged in here.
    expect(localStorage.getItem("gadget.token")).toBe("token-laptop");
    expect(screen.getByRole("heading", { name: "Account" })).toBeInTheDocument();
  });

  it("says so when the sign-in was already gone, and drops its row", async () => {
    window.history.replaceState(null, "", "/account");
    render(<App baseUrl={baseUrl} />);
    const table = await screen.findByRole("table");
    signIns = signIns.filter((item) => item.id !== "script");
    const script = within(table).getAllByRole("row")[2] as HTMLElement;
    await userEvent.click(within(script).getByRole("button", { name: "Revoke" }));
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "Could not revoke: Sign-in not found",
    );
    await waitForRows(1);
  });

  it("revoking this browser's sign-in logs it out", async () => {
    window.history.replaceState(null, "", "/account");
    render(<App baseUrl={baseUrl} />);
    await screen.findByRole("table");
    await userEvent.click(screen.getByRole("button", { name: "Revoke and log out" }));
    expect(await screen.findByRole("heading", { name: "Log in" })).toBeInTheDocument();
    expect(screen.getByText("You revoked this browser's sign-in.")).toBeInTheDocument();
    expect(seen).toContainEqual({
      method: "DELETE",
      path: "/api/auth/sign-ins/laptop",
      authorization: "Bearer token-laptop",
    });
    expect(localStorage.getItem("gadget.token")).toBeNull();
  });
});

async function waitForRows(count: number) {
  const table = await screen.findByRole("table");
  await expect.poll(() => within(table).getAllByRole("row").length - 1).toBe(count);
}

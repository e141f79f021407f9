// The app shell: the login gate, errors in words, landing on the Activity page after login, logging
// out on the server too, and signing up with an invite link.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { App } from "./app.tsx";

let server: Server;
let baseUrl: string;
/** The requests the fake server saw, with the token and body each carried. */
const seen: { method: string; path: string; authorization?: string; body: string }[] = [];

const adaUser = () => ({
  _id: "u1",
  email: "ada@example.test",
  name: "Ada",
  createdAt: new Date().toISOString(),
});

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      const path = new URL(request.url ?? "/", "http://localhost").pathname;
      seen.push({
        method: request.method ?? "",
        path,
        authorization: request.headers.authorization,
        body,
      });
      response.setHeader("content-type", "application/json");
      if (path === "/api/auth/logout") {
        response.statusCode = 204;
        response.end();
        return;
      }
      if (path === "/api/auth/signup") {
        const { invite } = JSON.parse(body) as { invite?: string };
        if (invite !== "inv-123") {
          response.statusCode = 403;
          response.end(
            JSON.stringify({
              error: {
                code: "forbidden",
                message: "Signup is closed on this server: an administrator creates accounts",
              },
            }),
          );
          return;
        }
        response.statusCode = 201;
        response.end(JSON.stringify({ token: "token-2", user: adaUser() }));
        return;
      }
      if (path === "/api/auth/login") {
        const { password } = JSON.parse(body) as { password: string };
        if (password !== "correct horse") {
          response.statusCode = 401;
          response.end(
            JSON.stringify({
              error: { code: "unauthorized", message: "Wrong email or password." },
            }),
          );
          return;
        }
        response.end(JSON.stringify({ token: "token-1", user: adaUser() }));
        return;
      }
      if (path === "/api/turns/summary") {
        response.end(JSON.stringify({ running: 0, awaitingApproval: 0, queued: 0 }));
        return;
      }
      if (path === "/api/turns" || path === "/api/drones" || path === "/api/providers") {
        response.end(JSON.stringify({ turns: [], drones: [], providers: [], nextCursor: null }));
        return;
      }
      if (path === "/api/projects") {
        response.end(
          JSON.stringify({
            projects: [
              {
                _id: "p1",
                name: "calculator",
                slug: "calculator",
                gitUrl: "/srv/git/calculator.git",
                defaultBranch: null,
                verifyCommands: [],
                createdAt: new Date().toISOString(),
              },
            ],
            nextCursor: null,
          }),
        );
        return;
      }
      response.statusCode = 404;
      response.end(JSON.stringify({ error: { code: "not_found", message: "Not found" } }));
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
  window.history.replaceState(null, "", "/");
});

async function logIn(password: string) {
  await userEvent.type(screen.getByLabelText("Email"), "ada@example.test");
  await userEvent.type(screen.getByLabelText("Password"), password);
  await userEvent.click(screen.getByRole("button", { name: "Log in" }));
}

describe("App", () => {
  it("sends a visitor who is not logged in to the login page, keeping where they wanted to go", () => {
    window.history.replaceState(null, "", "/drones");
    render(<App baseUrl={baseUrl} />);
    expect(screen.getByRole("heading", { name: "Log in" })).toBeInTheDocument();
    expect(window.location.pathname).toBe("/login");
    expect(window.location.search).toBe("?next=%2Fdrones");
  });

  it("says in words that the server cannot be reached", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    render(<App baseUrl={`http://127.0.0.1:${port}`} />);
    await logIn("whatever");
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "Could not log in: Cannot reach the Gadget Code server.",
    );
  });

  it("shows the server's refusal in words", async () => {
    render(<App baseUrl={baseUrl} />);
    await logIn("wrong password");
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "Could not log in: Wrong email or password.",
    );
  });

  it("logs in, lands on the Activity page, and logs out again, ending the token on the server", async () => {
    render(<App baseUrl={baseUrl} />);
    await logIn("correct horse");
    expect(await screen.findByRole("heading", { name: "Activity" })).toBeInTheDocument();
    // No turn yet: the page lists the first steps instead.
    expect(await screen.findByRole("region", { name: "Get started" })).toBeInTheDocument();
    expect(window.location.pathname).toBe("/");
    expect(localStorage.getItem("gadget.token")).toBe("token-1");
    await userEvent.click(screen.getByRole("button", { name: "Log out" }));
    expect(await screen.findByRole("heading", { name: "Log in" })).toBeInTheDocument();
    expect(localStorage.getItem("gadget.token")).toBeNull();
    await waitFor(() =>
      expect(seen).toContainEqual(
        expect.objectContaining({
          method: "POST",
          path: "/api/auth/logout",
          authorization: "Bearer token-1",
        }),
      ),
    );
  });

  it("logs out here even when the server cannot be told", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    localStorage.setItem("gadget.token", "token-1");
    localStorage.setItem("gadget.user", JSON.stringify(adaUser()));
    window.history.replaceState(null, "", "/drones");
    render(<App baseUrl={`http://127.0.0.1:${port}`} />);
    await userEvent.click(screen.getByRole("button", { name: "Log out" }));
    expect(await screen.findByRole("heading", { name: "Log in" })).toBeInTheDocument();
    expect(localStorage.getItem("gadget.token")).toBeNull();
  });

  it("signs up with the invite of an invite link", async () => {
    window.history.replaceState(null, "", "/signup?invite=inv-123");
    render(<App baseUrl={baseUrl} />);
    expect(screen.getByText(/You were invited/)).toBeInTheDocument();
    await userEvent.type(screen.getByLabelText("Email"), "grace@example.test");
    await userEvent.type(screen.getByLabelText(/^Password/), "correct horse battery");
    await userEvent.click(screen.getByRole("button", { name: "Sign up" }));
    expect(await screen.findByRole("heading", { name: "Activity" })).toBeInTheDocument();
    const signup = seen.find((request) => request.path === "/api/auth/signup");
    expect(JSON.parse(signup?.body ?? "{}")).toEqual({
      email: "grace@example.test",
      password: "correct horse battery",
      invite: "inv-123",
    });
    expect(localStorage.getItem("gadget.token")).toBe("token-2");
  });

  it("shows the server's reason when it does not let anyone sign up", async () => {
    window.history.replaceState(null, "", "/signup");
    render(<App baseUrl={baseUrl} />);
    expect(screen.queryByText(/You were invited/)).toBeNull();
    await userEvent.type(screen.getByLabelText("Email"), "grace@example.test");
    await userEvent.type(screen.getByLabelText(/^Password/), "correct horse battery");
    await userEvent.click(screen.getByRole("button", { name: "Sign up" }));
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "Could not sign up: Signup is closed on this server: an administrator creates accounts",
    );
    const signup = seen.find((request) => request.path === "/api/auth/signup");
    expect(JSON.parse(signup?.body ?? "{}")).not.toHaveProperty("invite");
  });
});

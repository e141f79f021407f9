// The app shell: the login gate, errors in words, and landing on the projects page after login.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { App } from "./app.tsx";

let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      response.setHeader("content-type", "application/json");
      if (request.url === "/api/auth/login") {
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
        response.end(
          JSON.stringify({
            token: "token-1",
            user: {
              _id: "u1",
              email: "ada@example.test",
              name: "Ada",
              createdAt: new Date().toISOString(),
            },
          }),
        );
        return;
      }
      if (request.url === "/api/projects") {
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

  it("logs in, lands on the projects page, and logs out again", async () => {
    render(<App baseUrl={baseUrl} />);
    await logIn("correct horse");
    expect(await screen.findByText("calculator")).toBeInTheDocument();
    expect(window.location.pathname).toBe("/projects");
    expect(localStorage.getItem("gadget.token")).toBe("token-1");
    await userEvent.click(screen.getByRole("button", { name: "Log out" }));
    expect(await screen.findByRole("heading", { name: "Log in" })).toBeInTheDocument();
    expect(localStorage.getItem("gadget.token")).toBeNull();
  });
});

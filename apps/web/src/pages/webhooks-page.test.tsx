// The webhooks page against a small HTTP server speaking the REST API: reached from the top bar,
// adding one with its events (the secret shown once, with a copy button), a test delivery shown
// with its status, the server's refusal in words, and deleting one.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Webhook, WebhookDelivery } from "@gadget/protocol";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { App } from "../app/app.tsx";

let server: Server;
let baseUrl: string;
let webhooks: Webhook[];
let deliveries: WebhookDelivery[];
const posted: unknown[] = [];
const secret = "whsec_q0sDmIcT3ZCdQmZ7aD2mY6wYB1qv3Y3pW5uH2x1eLkA";

beforeAll(async () => {
  server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://localhost").pathname;
    let text = "";
    request.on("data", (chunk: Buffer) => {
      text += chunk.toString();
    });
    request.on("end", () => {
      response.setHeader("content-type", "application/json");
      const send = (status: number, body?: unknown) => {
        response.statusCode = status;
        response.end(body === undefined ? undefined : JSON.stringify(body));
      };
      if (request.method === "GET" && path === "/api/webhooks") {
        return send(200, { webhooks, nextCursor: null });
      }
      if (request.method === "POST" && path === "/api/webhooks") {
        const body = JSON.parse(text) as { url: string; events: Webhook["events"] };
        posted.push(body);
        if (body.url.includes("127.0.0.1")) {
          return send(400, {
            error: {
              code: "validation_failed",
              message:
                "This webhook URL cannot be called: it points to a loopback, private or link-local address, which this server does not call",
            },
          });
        }
        const webhook = { _id: `w${webhooks.length + 1}`, ...body, createdAt: new Date() };
        webhooks.push(webhook);
        return send(201, { webhook, secret });
      }
      const match = /^\/api\/webhooks\/(\w+)(\/deliveries|\/test)?$/.exec(path);
      const webhook = webhooks.find((item) => item._id === match?.[1]);
      if (!webhook)
        return send(404, { error: { code: "not_found", message: "Webhook not found" } });
      if (request.method === "GET" && match?.[2] === "/deliveries") {
        return send(200, { deliveries: deliveries.filter((item) => item.webhook === webhook._id) });
      }
      if (request.method === "POST" && match?.[2] === "/test") {
        const delivery: WebhookDelivery = {
          _id: `whd_${deliveries.length + 1}`,
          webhook: webhook._id,
          event: "ping",
          turn: null,
          status: "pending",
          attempts: 1,
          lastStatusCode: 500,
          lastError: "the receiver answered HTTP 500",
          createdAt: new Date(),
          lastAttemptAt: new Date(),
          deliveredAt: null,
        };
        deliveries.unshift(delivery);
        return send(202, { delivery });
      }
      if (request.method === "DELETE" && !match?.[2]) {
        webhooks = webhooks.filter((item) => item !== webhook);
        return send(204);
      }
      send(404, { error: { code: "not_found", message: "Not found" } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  webhooks = [];
  deliveries = [
    {
      _id: "whd_old",
      webhook: "w0",
      event: "turn.completed",
      turn: "65f1a2b3c4d5e6f7a8b9c0d1",
      status: "delivered",
      attempts: 2,
      lastStatusCode: 200,
      lastError: null,
      createdAt: new Date(Date.now() - 60_000),
      lastAttemptAt: new Date(),
      deliveredAt: new Date(),
    },
  ];
  posted.length = 0;
  localStorage.clear();
  localStorage.setItem("gadget.token", "token-ada");
  localStorage.setItem(
    "gadget.user",
    JSON.stringify({ _id: "u1", email: "ada@example.test", name: "Ada", createdAt: new Date() }),
  );
  window.history.replaceState(null, "", "/projects");
});

describe("webhooks page", () => {
  it("adds a webhook with the chosen events and shows its secret once", async () => {
    render(<App baseUrl={baseUrl} />);
    await userEvent.click(screen.getByRole("link", { name: "Webhooks" }));
    expect(window.location.pathname).toBe("/webhooks");
    expect(await screen.findByText("No webhooks yet.")).toBeInTheDocument();

    const form = screen.getByRole("form", { name: "Add a webhook" });
    await userEvent.type(within(form).getByLabelText("URL"), "https://hooks.example.com/gadget");
    // Every event is ticked at first, cancelled and interrupted turns too.
    for (const box of within(form).getAllByRole("checkbox")) expect(box).toBeChecked();
    expect(within(form).getAllByRole("checkbox")).toHaveLength(5);
    await userEvent.click(within(form).getByRole("checkbox", { name: /waits for your approval/ }));
    await userEvent.click(within(form).getByRole("checkbox", { name: /was interrupted/ }));
    await userEvent.click(within(form).getByRole("button", { name: "Add webhook" }));

    expect(await screen.findByTestId("webhook-secret")).toHaveTextContent(secret);
    expect(screen.getByRole("button", { name: "Copy" })).toBeInTheDocument();
    expect(posted).toEqual([
      {
        url: "https://hooks.example.com/gadget",
        events: ["turn.completed", "turn.failed", "turn.cancelled"],
      },
    ]);
    const card = screen.getByRole("listitem", { name: "https://hooks.example.com/gadget" });
    expect(card).toHaveTextContent("turn.completed · turn.failed · turn.cancelled");

    await userEvent.click(screen.getByRole("button", { name: "I have copied it" }));
    expect(screen.queryByTestId("webhook-secret")).toBeNull();
    expect(document.body.textContent).not.toContain(secret);
  });

  it("says why the server refused a URL", async () => {
    window.history.replaceState(null, "", "/webhooks");
    render(<App baseUrl={baseUrl} />);
    const form = await screen.findByRole("form", { name: "Add a webhook" });
    await userEvent.type(within(form).getByLabelText("URL"), "http://127.0.0.1:9000/hook");
    await userEvent.click(within(form).getByRole("button", { name: "Add webhook" }));
    expect(await within(form).findByRole("alert")).toHaveTextContent(
      "Could not add the webhook: This webhook URL cannot be called: it points to a loopback",
    );
    expect(screen.queryByTestId("webhook-secret")).toBeNull();
  });

  it("sends a test, shows deliveries with their status, and deletes after a confirmation", async () => {
    webhooks = [
      {
        _id: "w0",
        url: "https://hooks.example.com/a",
        events: ["turn.failed"],
        createdAt: new Date(),
      },
    ];
    window.history.replaceState(null, "", "/webhooks");
    render(<App baseUrl={baseUrl} />);
    const card = await screen.findByRole("listitem", { name: "https://hooks.example.com/a" });
    const table = await within(card).findByRole("table", { name: "Recent deliveries" });
    expect(within(table).getAllByRole("row")[1]).toHaveTextContent(
      "turn.completeddelivered2HTTP 200",
    );

    await userEvent.click(within(card).getByRole("button", { name: "Send test" }));
    await within(card).findByText("ping");
    const rows = within(card).getAllByRole("row");
    expect(rows[1]).toHaveTextContent("pingpending1the receiver answered HTTP 500");
    expect(rows).toHaveLength(3);

    await userEvent.click(within(card).getByRole("button", { name: "Delete…" }));
    await userEvent.click(within(card).getByRole("button", { name: "Delete this webhook" }));
    expect(await screen.findByText("No webhooks yet.")).toBeInTheDocument();
    expect(webhooks).toEqual([]);
  });
});

// Structured logs an operator can follow: one line per API request with its id (echoed in the
// answer, or the caller's own x-request-id), the user, status and time; failures carry the same
// id; secrets never appear; probes stay out of the info log.
import { Writable } from "node:stream";
import { createLogger } from "@gadget/logging";
import { describe, expect, it } from "vitest";
import { signup } from "../testing/api-client.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const lines: Array<Record<string, unknown>> = [];
const destination = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
    done();
  },
});
const fixture = useTestServer({ logger: createLogger({ level: "info", destination }) });

const requestLines = (requestId: string) =>
  lines.filter((line) => line.msg === "request" && line.requestId === requestId);

describe("request logs", () => {
  it("logs each API request once with its id, user, status and time", async () => {
    const user = await signup(fixture.server.url, "logged");
    const response = await fetch(`${fixture.server.url}/api/projects?x=1`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    const requestId = response.headers.get("x-request-id");
    expect(requestId).toMatch(/^[0-9a-f]{16}$/);
    const me = await fetch(`${fixture.server.url}/api/me`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    await expect.poll(() => requestLines(requestId!).length).toBe(1);
    const line = requestLines(requestId!)[0]!;
    expect(line).toMatchObject({
      level: 30,
      method: "GET",
      path: "/api/projects",
      status: 200,
      userId: user.userId,
    });
    expect(line.ms).toEqual(expect.any(Number));
    expect(me.headers.get("x-request-id")).not.toBe(requestId);
  });

  it("keeps a caller's x-request-id and refuses odd ones", async () => {
    const kept = await fetch(`${fixture.server.url}/api/me`, {
      headers: { "x-request-id": "lb-7f3a:42" },
    });
    expect(kept.status).toBe(401);
    expect(kept.headers.get("x-request-id")).toBe("lb-7f3a:42");
    await expect
      .poll(() => requestLines("lb-7f3a:42"))
      .toEqual([expect.objectContaining({ path: "/api/me", status: 401 })]);
    const odd = await fetch(`${fixture.server.url}/api/me`, {
      headers: { "x-request-id": 'has spaces and "quotes"' },
    });
    expect(odd.headers.get("x-request-id")).toMatch(/^[0-9a-f]{16}$/);
  });

  it("never logs passwords or tokens, and keeps probes at debug", async () => {
    const before = lines.length;
    await fetch(`${fixture.server.url}/api/auth/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "secret@example.com", password: "hunter2-hunter2" }),
    });
    await fetch(`${fixture.server.url}/healthz`);
    await fetch(`${fixture.server.url}/readyz`);
    await expect
      .poll(() => lines.slice(before).some((line) => line.path === "/api/auth/signup"))
      .toBe(true);
    const text = JSON.stringify(lines.slice(before));
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("gat_");
    expect(
      lines.slice(before).filter((line) => line.path === "/healthz" || line.path === "/readyz"),
    ).toEqual([]);
  });
});

// Limits that keep one client from hurting the rest: wrong passwords per email and address, login
// attempts per address (the client's own address behind a trusted proxy), and the largest
// browser socket message.
import { io } from "socket.io-client";
import { describe, expect, it } from "vitest";
import { ApiClient, signup } from "../testing/api-client.ts";
import { useTestServer } from "../testing/use-test-server.ts";

// 2 free wrong passwords per email and address, 20 (10×) attempts per address in a minute.
const direct = useTestServer({ loginRateLimit: { max: 2, windowMs: 60_000 } });
const proxied = useTestServer({ loginRateLimit: { max: 2, windowMs: 60_000 }, trustProxy: true });

async function login(url: string, email: string, headers: Record<string, string> = {}) {
  return new ApiClient(url).request(
    "POST",
    "/api/auth/login",
    { email, password: "wrong-password" },
    headers,
  );
}

describe("login rate limits", () => {
  it("slows wrong passwords for one email from one address, and says when to try again", async () => {
    const url = direct.server.url;
    expect((await login(url, "target@example.com")).status).toBe(401);
    expect((await login(url, "target@example.com")).status).toBe(401);
    const limited = await login(url, "Target@Example.com");
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ code: "rate_limited" });
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("limits attempts per address across many emails", async () => {
    const url = direct.server.url;
    const statuses: number[] = [];
    for (let index = 0; index < 22; index++) {
      statuses.push((await login(url, `spray-${index}@example.com`)).status);
    }
    // The previous test spent 3 of this address's 20.
    expect(statuses.filter((status) => status === 401)).toHaveLength(17);
    expect(statuses.slice(17)).toEqual([429, 429, 429, 429, 429]);
  });

  it("behind a trusted proxy, counts each client's own address", async () => {
    const url = proxied.server.url;
    for (let index = 0; index < 20; index++) {
      expect(
        (await login(url, `a-${index}@example.com`, { "x-forwarded-for": "203.0.113.7" })).status,
      ).toBe(401);
    }
    expect(
      (await login(url, "a-20@example.com", { "x-forwarded-for": "203.0.113.7" })).status,
    ).toBe(429);
    expect(
      (await login(url, "b-0@example.com", { "x-forwarded-for": "198.51.100.9" })).status,
    ).toBe(401);
    // Not trusted: the header changes nothing on the direct server (already over its limit above).
    expect(
      (await login(direct.server.url, "c-0@example.com", { "x-forwarded-for": "192.0.2.1" }))
        .status,
    ).toBe(429);
  });
});

describe("socket message limit", () => {
  it("closes a browser connection that sends a message over 64 KiB; the server goes on", async () => {
    const user = await signup(direct.server.url, "big-sender");
    const socket = io(`${direct.server.url}/ide`, {
      auth: { token: user.token },
      transports: ["websocket"],
      reconnection: false,
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("connect_error", reject);
    });
    const reason = new Promise<string>((resolve) => socket.once("disconnect", resolve));
    socket.emit("subscribe", { turnId: "x".repeat(65 * 1024), after: 0 });
    expect(await reason).toBe("transport close");
    expect((await user.get("/api/me")).status).toBe(200);
    socket.close();
  });
});

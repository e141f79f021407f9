// The web IDE at `/`: files from the build, index.html for client routes, the server's own paths
// untouched, and a page that says how to build it when there is no build.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { GadgetServer } from "../server.ts";
import { signup } from "../testing/api-client.ts";
import { startTestServer } from "../testing/test-server.ts";
import { contentSecurityPolicy } from "./security-headers.ts";

const indexHtml = '<!doctype html><div id="root"></div><script src="/assets/app-3f2a.js"></script>';
let webDir: string;
let server: GadgetServer;
let unbuilt: GadgetServer;

beforeAll(async () => {
  webDir = await mkdtemp(path.join(tmpdir(), "gadget-web-"));
  await mkdir(path.join(webDir, "assets"));
  await writeFile(path.join(webDir, "index.html"), indexHtml);
  await writeFile(path.join(webDir, "assets", "app-3f2a.js"), "console.log('app');");
  await writeFile(path.join(webDir, "favicon.svg"), "<svg/>");
  const services = { mongoUrl: inject("mongoUrl"), redisUrl: inject("redisUrl") };
  server = await startTestServer({ ...services, webDir });
  unbuilt = await startTestServer({ ...services, webDir: path.join(webDir, "missing") });
});
afterAll(async () => {
  for (const instance of [server, unbuilt]) {
    await instance?.context.models.User.db.dropDatabase();
    await instance?.close();
  }
  await rm(webDir, { recursive: true, force: true });
});

describe("the web IDE at /", () => {
  it("serves index.html at / and for client routes, never cached", async () => {
    for (const route of ["/", "/drones", "/projects/65f0c0ffee/sessions/65f0beef?tab=changes"]) {
      const response = await fetch(`${server.url}${route}`);
      expect(response.status, route).toBe(200);
      expect(response.headers.get("content-type"), route).toContain("text/html");
      expect(response.headers.get("cache-control"), route).toBe("no-cache");
      expect(await response.text(), route).toBe(indexHtml);
    }
  });

  it("serves hashed assets for a year and other files as they are", async () => {
    const asset = await fetch(`${server.url}/assets/app-3f2a.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toContain("javascript");
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await asset.text()).toBe("console.log('app');");
    const icon = await fetch(`${server.url}/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get("cache-control")).toBe("no-cache");
  });

  it("answers a missing file with 404, not the page", async () => {
    const response = await fetch(`${server.url}/assets/app-0000.js`);
    expect(response.status).toBe(404);
    expect(await response.text()).not.toContain('<div id="root">');
  });

  it("leaves the API, Socket.IO and operations paths to the server", async () => {
    const api = await fetch(`${server.url}/api/nothing-here`);
    expect(api.status).toBe(404);
    expect(await api.json()).toEqual({
      error: expect.objectContaining({
        code: "not_found",
        message: "No route GET /api/nothing-here",
      }),
    });
    const me = await fetch(`${server.url}/api/me`);
    expect(me.status).toBe(401);
    expect((await fetch(`${server.url}/healthz`)).headers.get("content-type")).toContain("json");
    const metrics = await fetch(`${server.url}/metrics`);
    expect(await metrics.text()).toContain("# TYPE");
    const socket = await fetch(`${server.url}/socket.io/?EIO=4&transport=polling`);
    expect(await socket.text()).toMatch(/^0\{"sid"/);
  });

  it("says how to build the web IDE when there is no build", async () => {
    const response = await fetch(`${unbuilt.url}/projects`);
    expect(response.status).toBe(404);
    const text = await response.text();
    expect(text).toContain("The web IDE is not built");
    expect(text).toContain("pnpm --filter @gadget/web build");
    expect((await fetch(`${unbuilt.url}/healthz`)).status).toBe(200);
  });

  it("does not show where the server looked for the build", async () => {
    const text = await (await fetch(`${unbuilt.url}/`)).text();
    expect(text).toContain("The web IDE is not built.");
    expect(text).not.toContain(webDir);
    expect(text).not.toContain("missing");
    // Nothing that looks like an absolute directory path (`/api` alone is fine).
    expect(text).not.toMatch(/\/[\w.-]+\//);
  });
});

describe("security headers", () => {
  /** The headers a browser needs to keep model output from loading, sending or framing anything. */
  function expectSecurityHeaders(response: Response, what: string): void {
    expect(response.headers.get("content-security-policy"), what).toBe(contentSecurityPolicy);
    expect(response.headers.get("x-content-type-options"), what).toBe("nosniff");
    expect(response.headers.get("x-frame-options"), what).toBe("DENY");
    expect(response.headers.get("referrer-policy"), what).toBe("no-referrer");
  }

  it("sends a policy that loads nothing from elsewhere and allows no framing or form posts", () => {
    const directives = Object.fromEntries(
      contentSecurityPolicy.split("; ").map((part) => {
        const [name, ...sources] = part.split(" ");
        return [name, sources.join(" ")];
      }),
    );
    expect(directives).toEqual({
      "default-src": "'self'",
      "script-src": "'self'",
      "style-src": "'self' 'unsafe-inline'",
      "img-src": "'self' data:",
      "font-src": "'self' data:",
      "connect-src": "'self'",
      "object-src": "'none'",
      "base-uri": "'none'",
      "form-action": "'none'",
      "frame-ancestors": "'none'",
    });
  });

  it("puts them on the page, the assets and client routes", async () => {
    for (const route of ["/", "/projects/65f0c0ffee", "/assets/app-3f2a.js", "/favicon.svg"]) {
      const response = await fetch(`${server.url}${route}`);
      expect(response.status, route).toBe(200);
      expectSecurityHeaders(response, route);
    }
    const missing = await fetch(`${server.url}/assets/app-0000.js`);
    expect(missing.status).toBe(404);
    expectSecurityHeaders(missing, "missing asset");
  });

  it("puts them on API answers, errors and operations paths", async () => {
    const user = await signup(server.url, "headers");
    const me = await fetch(`${server.url}/api/me`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(me.status).toBe(200);
    expectSecurityHeaders(me, "GET /api/me");
    const anonymous = await fetch(`${server.url}/api/me`);
    expect(anonymous.status).toBe(401);
    expectSecurityHeaders(anonymous, "GET /api/me without a token");
    const unknown = await fetch(`${server.url}/api/nothing-here`);
    expect(unknown.status).toBe(404);
    expectSecurityHeaders(unknown, "API 404");
    const invalid = await fetch(`${server.url}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(invalid.status).toBe(400);
    expectSecurityHeaders(invalid, "invalid JSON");
    expectSecurityHeaders(await fetch(`${server.url}/healthz`), "/healthz");
  });

  it("puts them on the page that says the web IDE is not built", async () => {
    const response = await fetch(`${unbuilt.url}/`);
    expect(response.status).toBe(404);
    expectSecurityHeaders(response, "placeholder");
  });
});

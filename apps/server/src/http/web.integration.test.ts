// The web IDE at `/`: files from the build, index.html for client routes, the server's own paths
// untouched, and a page that says how to build it when there is no build.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { GadgetServer } from "../server.ts";
import { startTestServer } from "../testing/test-server.ts";

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
});

// The filtering proxy on a real unix socket, in front of two real loopback listeners: one allowed.
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FilteringProxy } from "./filtering-proxy.ts";
import type { Refusal } from "./host-allowlist.ts";

interface Listener {
  port: number;
  hits: string[];
  close: () => Promise<void>;
}

async function listener(name: string): Promise<Listener> {
  const hits: string[] = [];
  const server = http.createServer((request, response) => {
    hits.push(`${request.method} ${request.url} host=${request.headers.host}`);
    response.end(`hello from ${name}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A plain-HTTP request through the proxy: the status and body it answered. */
function viaProxy(socketPath: string, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { socketPath, method: "GET", path: url, headers: { host: new URL(url).host } },
      (response) => {
        let body = "";
        response.on("data", (chunk) => {
          body += chunk;
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on("error", reject);
    request.end();
  });
}

/** A CONNECT tunnel through the proxy, then an HTTP request inside it. */
function tunnel(socketPath: string, authority: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ socketPath, method: "CONNECT", path: authority });
    request.on("connect", (response, socket) => {
      if (response.statusCode !== 200) {
        let body = "";
        socket.on("data", (chunk) => {
          body += chunk;
        });
        socket.on("close", () => resolve({ status: response.statusCode ?? 0, body }));
        return;
      }
      socket.write(`GET /tunnelled HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`);
      let raw = "";
      socket.on("data", (chunk) => {
        raw += chunk;
      });
      socket.on("end", () => resolve({ status: 200, body: raw.split("\r\n\r\n")[1] ?? "" }));
    });
    request.on("error", reject);
    request.end();
  });
}

describe("FilteringProxy", () => {
  let directory: string;
  let allowed: Listener;
  let other: Listener;
  let proxy: FilteringProxy | undefined;
  let refused: Refusal[];

  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "gadget-proxy-"));
    allowed = await listener("allowed");
    other = await listener("other");
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });
  afterAll(async () => {
    await allowed.close();
    await other.close();
    await rm(directory, { recursive: true, force: true });
  });

  async function start(allowedHosts: string[], resolve?: (host: string) => Promise<string[]>) {
    refused = [];
    proxy = new FilteringProxy({
      allowedHosts,
      onRefused: (refusal) => refused.push(refusal),
      ...(resolve ? { resolve } : {}),
    });
    const socketPath = path.join(directory, `proxy-${Math.random().toString(16).slice(2)}.sock`);
    await proxy.listen({ path: socketPath });
    return socketPath;
  }

  it("forwards to the allowed listener only, by plain HTTP and by CONNECT", async () => {
    const socketPath = await start([`127.0.0.1:${allowed.port}`]);
    const plain = await viaProxy(socketPath, `http://127.0.0.1:${allowed.port}/plain`);
    expect(plain).toEqual({ status: 200, body: "hello from allowed" });
    const connected = await tunnel(socketPath, `127.0.0.1:${allowed.port}`);
    expect(connected.body).toBe("hello from allowed");

    const blocked = await viaProxy(socketPath, `http://127.0.0.1:${other.port}/plain`);
    expect(blocked.status).toBe(403);
    expect(blocked.body).toContain("not in the project's allowedHosts");
    const blockedTunnel = await tunnel(socketPath, `127.0.0.1:${other.port}`);
    expect(blockedTunnel.status).toBe(403);

    expect(allowed.hits).toEqual([
      `GET /plain host=127.0.0.1:${allowed.port}`,
      `GET /tunnelled host=127.0.0.1:${allowed.port}`,
    ]);
    expect(other.hits).toEqual([]);
    expect(refused.map((refusal) => refusal.port)).toEqual([other.port, other.port]);
  });

  it("allows nothing with an empty list", async () => {
    const before = allowed.hits.length;
    const socketPath = await start([]);
    expect((await viaProxy(socketPath, `http://127.0.0.1:${allowed.port}/`)).status).toBe(403);
    expect((await tunnel(socketPath, `127.0.0.1:${allowed.port}`)).status).toBe(403);
    expect(allowed.hits.length).toBe(before);
  });

  it("refuses an allowed host name that resolves to a loopback address (DNS rebinding)", async () => {
    const before = allowed.hits.length;
    // The one stand-in here: a resolver answering like a hostile DNS server would.
    const socketPath = await start(["packages.example"], async () => ["127.0.0.1"]);
    const answer = await viaProxy(socketPath, `http://packages.example:${allowed.port}/`);
    expect(answer.status).toBe(403);
    expect(answer.body).toContain("resolves to 127.0.0.1");
    expect((await tunnel(socketPath, `packages.example:${allowed.port}`)).status).toBe(403);
    expect(allowed.hits.length).toBe(before);
  });

  it("answers garbage and relative URLs with 400, and keeps serving", async () => {
    const socketPath = await start([`127.0.0.1:${allowed.port}`]);
    const relative = await new Promise<number>((resolve, reject) => {
      const request = http.request({ socketPath, path: "/relative" }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on("error", reject);
      request.end();
    });
    expect(relative).toBe(400);
    const { connect } = await import("node:net");
    await new Promise<void>((resolve) => {
      const socket = connect(socketPath, () => socket.end("\x00\x01garbage\r\n\r\n"));
      socket.on("close", () => resolve());
      socket.on("error", () => resolve());
      socket.resume();
    });
    expect((await viaProxy(socketPath, `http://127.0.0.1:${allowed.port}/after`)).status).toBe(200);
  });
});

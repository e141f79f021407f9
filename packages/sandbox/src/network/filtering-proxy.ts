// The filtering proxy: the only way out of a sandbox whose project allows a list of hosts.
// HTTP CONNECT tunnels and plain-HTTP forwarding, each checked against the allowlist, and each
// connecting to the exact address it checked (a second DNS answer cannot redirect it).
import { lookup } from "node:dns/promises";
import http from "node:http";
import { isIP, type Server, type Socket, connect as tcpConnect } from "node:net";
import type { Duplex } from "node:stream";
import { HostAllowlist, type HostRule, normaliseHost, type Refusal } from "./host-allowlist.ts";

export interface FilteringProxyOptions {
  /** `allowedHosts` of the project; empty allows nothing. */
  allowedHosts: readonly string[];
  /** Called for every refused connection (the command's report names them). */
  onRefused?: (refusal: Refusal) => void;
  /** Host name lookups; default: the system resolver (`dns.lookup`, all addresses). */
  resolve?: (host: string) => Promise<string[]>;
  /** Milliseconds to connect upstream. Default: 15,000. */
  connectTimeoutMs?: number;
}

type Target = { address: string; port: number };

async function systemResolve(host: string): Promise<string[]> {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
}

/** Splits `host:port` (a CONNECT target) or a Host header into its parts. */
function splitAuthority(authority: string, defaultPort: number): { host: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(authority);
  if (bracketed) {
    return { host: bracketed[1] as string, port: Number(bracketed[2] ?? defaultPort) };
  }
  const index = authority.lastIndexOf(":");
  if (index > 0 && isIP(authority) !== 6) {
    return { host: authority.slice(0, index), port: Number(authority.slice(index + 1)) };
  }
  return { host: authority, port: defaultPort };
}

/**
 * An HTTP proxy that lets a sandboxed command reach only its project's allowed hosts. Listens on
 * a unix socket (bridged into the sandbox's empty network namespace) or on a loopback port.
 * @example
 * const proxy = new FilteringProxy({ allowedHosts: ["registry.npmjs.org"] });
 * await proxy.listen({ path: "/run/user/1000/gadget/proxy.sock" });
 */
export class FilteringProxy {
  private readonly allowlist: HostAllowlist;
  private readonly server: http.Server;
  private readonly sockets = new Set<Duplex>();
  private readonly resolve: (host: string) => Promise<string[]>;

  constructor(private readonly options: FilteringProxyOptions) {
    this.allowlist = new HostAllowlist(options.allowedHosts);
    this.resolve = options.resolve ?? systemResolve;
    this.server = http.createServer((request, response) => void this.forward(request, response));
    this.server.on("connect", (request: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.tunnel(request, socket, head);
    });
    this.server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    // A client that sends garbage gets a 400, never a crash.
    this.server.on("clientError", (_error, socket) => {
      socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    });
  }

  /** Starts listening on a unix socket path or a loopback port (0 picks one). */
  listen(where: { path: string } | { port: number }): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      const ready = () => {
        this.server.off("error", reject);
        resolve();
      };
      if ("path" in where) this.server.listen(where.path, ready);
      else this.server.listen(where.port, "127.0.0.1", ready);
    });
  }

  /** The loopback port when listening on one. */
  get port(): number | null {
    const address = (this.server as Server).address();
    return typeof address === "object" && address ? address.port : null;
  }

  /** Stops listening and cuts every open tunnel. */
  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Decides where `host:port` may go: the checked address, or a refusal reason. */
  private async admit(rawHost: string, port: number): Promise<Target | Refusal> {
    const host = normaliseHost(rawHost);
    const refuse = (reason: string): Refusal => {
      const refusal = { host, port, reason };
      this.options.onRefused?.(refusal);
      return refusal;
    };
    if (!host || !Number.isInteger(port) || port < 1 || port > 65535) {
      return refuse("not a host and port");
    }
    const rule: HostRule | null = this.allowlist.match(host, port);
    if (!rule) return refuse(`${host}:${port} is not in the project's allowedHosts`);
    let addresses: string[];
    try {
      addresses = isIP(host) ? [host] : await this.resolve(host);
    } catch {
      return refuse(`${host} does not resolve`);
    }
    // Every answer must be allowed: a name that also resolves to 127.0.0.1 is refused outright.
    const forbidden = addresses.find((address) => !HostAllowlist.mayReach(rule, address));
    if (forbidden || addresses.length === 0) {
      return refuse(
        `${host} resolves to ${forbidden ?? "nothing"}, a loopback or private address (list the address itself to allow it)`,
      );
    }
    return { address: addresses[0] as string, port };
  }

  private async tunnel(request: http.IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    client.on("error", () => client.destroy());
    const { host, port } = splitAuthority(request.url ?? "", 443);
    const target = await this.admit(host, port);
    if ("reason" in target) {
      client.end(
        `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ngadget sandbox: ${target.reason}\n`,
      );
      return;
    }
    const upstream = tcpConnect({ host: target.address, port: target.port });
    upstream.setTimeout(this.options.connectTimeoutMs ?? 15_000, () =>
      upstream.destroy(new Error("connect timeout")),
    );
    upstream.once("connect", () => {
      upstream.setTimeout(0);
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => {
      if (!client.destroyed) client.end("HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n");
    });
    upstream.on("close", () => client.destroy());
    client.on("close", () => upstream.destroy());
  }

  private async forward(
    request: http.IncomingMessage,
    response: http.ServerResponse,
  ): Promise<void> {
    let url: URL;
    try {
      url = new URL(request.url ?? "");
    } catch {
      response
        .writeHead(400, { "content-type": "text/plain", connection: "close" })
        .end("gadget sandbox: proxy requests need an absolute http:// URL\n");
      return;
    }
    if (url.protocol !== "http:") {
      response
        .writeHead(400, { "content-type": "text/plain", connection: "close" })
        .end(`gadget sandbox: ${url.protocol} is not proxied; use CONNECT for https\n`);
      return;
    }
    const port = url.port ? Number(url.port) : 80;
    const target = await this.admit(url.hostname, port);
    if ("reason" in target) {
      response
        // Closed after a refusal: a client that does not read the body must not be kept waiting.
        .writeHead(403, { "content-type": "text/plain", connection: "close" })
        .end(`gadget sandbox: ${target.reason}\n`);
      return;
    }
    const headers = { ...request.headers };
    delete headers["proxy-connection"];
    delete headers["proxy-authorization"];
    headers.host = url.host;
    const upstream = http.request(
      {
        host: target.address,
        port: target.port,
        method: request.method,
        path: `${url.pathname}${url.search}`,
        headers,
        setHost: false,
        timeout: this.options.connectTimeoutMs ?? 15_000,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on("timeout", () => upstream.destroy(new Error("timeout")));
    upstream.on("error", () => {
      if (!response.headersSent) response.writeHead(502).end();
      else response.destroy();
    });
    request.pipe(upstream);
  }
}

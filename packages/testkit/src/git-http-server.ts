// A smart-HTTP git remote on loopback: a small Node HTTP server running `git http-backend` as CGI
// for the bare repositories under one directory, with basic authentication, as a forge would.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface GitHttpServerOptions {
  /** The directory holding the bare repositories (`GIT_PROJECT_ROOT`). */
  root: string;
  /** Accepted `user → password` pairs. */
  accounts: Record<string, string>;
  /** `push`: anyone may fetch, a push needs an account (a public repository); `all` (default): every request does. */
  authenticate?: "push" | "all";
}

export interface GitHttpServer {
  /** `http://127.0.0.1:<port>`; a repository is `${url}/<name>.git`. */
  url: string;
  /** Requests refused for want of a valid account so far. */
  refused: () => number;
  close: () => Promise<void>;
}

/**
 * Serves the bare repositories under `root` over smart HTTP, as `REMOTE_USER` of the account.
 * @example const remote = await startGitHttpServer({ root, accounts: { ada: "s3cret" } }); // git clone ${remote.url}/app.git
 */
export async function startGitHttpServer(options: GitHttpServerOptions): Promise<GitHttpServer> {
  let refused = 0;
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    const push =
      url.searchParams.get("service") === "git-receive-pack" ||
      url.pathname.endsWith("/git-receive-pack");
    const user = accountOf(request, options.accounts);
    if (!user && (push || (options.authenticate ?? "all") === "all")) {
      refused += 1;
      response.writeHead(401, { "www-authenticate": 'Basic realm="git"' }).end("unauthorized\n");
      return;
    }
    runBackend(options.root, user ?? "", url, request, response);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    refused: () => refused,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function accountOf(request: IncomingMessage, accounts: Record<string, string>): string | null {
  const header = request.headers.authorization ?? "";
  if (!header.startsWith("Basic ")) return null;
  const decoded = Buffer.from(header.slice(6), "base64").toString("utf8");
  const separator = decoded.indexOf(":");
  const user = decoded.slice(0, separator);
  return separator > 0 && accounts[user] === decoded.slice(separator + 1) ? user : null;
}

/** One CGI request: headers become the environment, the body goes in, git's answer comes out. */
function runBackend(
  root: string,
  user: string,
  url: URL,
  request: IncomingMessage,
  response: ServerResponse,
): void {
  const backend = spawn("git", ["http-backend"], {
    env: {
      PATH: process.env.PATH ?? "",
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      // http-backend serves receive-pack only to an authenticated user.
      REMOTE_USER: user,
      REMOTE_ADDR: "127.0.0.1",
      GATEWAY_INTERFACE: "CGI/1.1",
      REQUEST_METHOD: request.method ?? "GET",
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: request.headers["content-type"] ?? "",
      // Chunked bodies have no length; http-backend then reads to the end of its input.
      ...(request.headers["content-length"]
        ? { CONTENT_LENGTH: request.headers["content-length"] }
        : {}),
      ...(request.headers["content-encoding"]
        ? { HTTP_CONTENT_ENCODING: request.headers["content-encoding"] }
        : {}),
      ...(request.headers["git-protocol"]
        ? { GIT_PROTOCOL: String(request.headers["git-protocol"]) }
        : {}),
    },
  });
  request.pipe(backend.stdin);
  let head = Buffer.alloc(0);
  let headersSent = false;
  backend.stdout.on("data", (chunk: Buffer) => {
    if (headersSent) {
      response.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end < 0) return;
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of head.subarray(0, end).toString("utf8").split("\r\n")) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    response.writeHead(status, headers);
    headersSent = true;
    response.write(head.subarray(end + 4));
  });
  backend.on("close", () => {
    if (!headersSent) response.writeHead(500).end();
    else response.end();
  });
  backend.on("error", () => response.destroy());
}

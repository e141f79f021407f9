// @gadget/testkit/browser: the Chromium harness of e2e tests and benches: build a Vite app, serve it
// with the SPA fallback, put a cuttable link in front of a server, drive Debian's chromium through
// playwright-core, and keep screenshots under test-artifacts/.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium, type Page } from "playwright-core";

/** test-artifacts/web at the repository's root (this file is packages/testkit/src/browser.ts). */
export const artifactsDir = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../test-artifacts/web",
);

/** Where Debian puts chromium; CHROMIUM_PATH overrides (CI images differ). */
export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** The flags the issue asks for: no sandbox (containers), no GPU, nothing phoning home. */
export const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export interface Browser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/**
 * Launches headless Chromium with a fresh user-data dir, removed again on close.
 * @example const { page, close } = await launchBrowser(); await page.goto(url); await close();
 */
export async function launchBrowser(
  options: { colorScheme?: "light" | "dark"; viewport?: { width: number; height: number } } = {},
): Promise<Browser> {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `Chromium not found at ${chromiumPath}. Install Debian's package (apt-get install -y chromium) or set CHROMIUM_PATH.`,
    );
  }
  const userDataDir = await mkdtemp(path.join(tmpdir(), "gadget-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
    viewport: options.viewport ?? { width: 1280, height: 860 },
    colorScheme: options.colorScheme ?? "light",
  });
  for (const opened of context.pages()) navigatesThroughNetworkChanges(opened);
  context.on("page", navigatesThroughNetworkChanges);
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    close: async () => {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Chromium aborts a navigation in flight with `net::ERR_NETWORK_CHANGED` when the machine's
 * interfaces change; the suite's second-host test adds and removes a veth pair while other files'
 * browsers navigate. Such a `goto` is tried once more, as a person would reload; any other
 * failure stands.
 */
function navigatesThroughNetworkChanges(page: Page): void {
  const goto = page.goto.bind(page);
  page.goto = async (url, options) => {
    try {
      return await goto(url, options);
    } catch (error) {
      if (!String(error).includes("net::ERR_NETWORK_CHANGED")) throw error;
      return goto(url, options);
    }
  };
}

/**
 * Builds the Vite app in `appDir` (with its vite.config.ts), or another entry of it, into `outDir`.
 * @example await buildApp(webDir, outDir, { input: path.join(webDir, "bench/page/index.html") });
 */
export async function buildApp(
  appDir: string,
  outDir: string,
  options: { input?: string } = {},
): Promise<void> {
  const { build } = await import("vite");
  await build({
    root: appDir,
    configFile: path.join(appDir, "vite.config.ts"),
    logLevel: "warn",
    build: {
      outDir,
      emptyOutDir: true,
      sourcemap: false,
      ...(options.input ? { rolldownOptions: { input: options.input } } : {}),
    },
  });
}

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".map": "application/json",
  ".png": "image/png",
};

export interface StaticServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * Serves a built app the way production does: files from `dir`, and index.html for any other
 * GET (client routes). There is no API behind it: /api and /socket.io fail like a server that is
 * down (the connection is dropped).
 */
export async function serveStatic(dir: string): Promise<StaticServer> {
  const index = await readFile(path.join(dir, "index.html"));
  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    if (url.pathname.startsWith("/api/") || url.pathname.startsWith("/socket.io/")) {
      request.socket.destroy();
      return;
    }
    const file = path.join(
      dir,
      path.normalize(decodeURIComponent(url.pathname)).replace(/^(\.\.[/\\])+/, ""),
    );
    try {
      if (file.startsWith(dir) && (await stat(file)).isFile()) {
        response.writeHead(200, {
          "content-type": contentTypes[path.extname(file)] ?? "application/octet-stream",
        });
        response.end(await readFile(file));
        return;
      }
    } catch {
      // Not a file: a client route.
    }
    if (path.extname(url.pathname)) {
      response.writeHead(404, { "content-type": "text/plain" });
      response.end("Not found");
      return;
    }
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end(index);
  });
  server.on("upgrade", (_request, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface NetworkLink {
  /** Where the browser goes instead of the target: same paths, another port. */
  url: string;
  /** Cuts the link (open connections are dropped, new ones refused) or mends it. */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

/**
 * A TCP link to `target` that a test can cut, as a network between the browser and the server
 * that fails: HTTP, WebSockets and all pass through it unchanged while it is up.
 * @example const link = await startNetworkLink(server.url); link.setDown(true);
 */
export async function startNetworkLink(target: string): Promise<NetworkLink> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let down = false;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const server = createNetServer((incoming) => {
    if (down) {
      incoming.destroy();
      return;
    }
    const outgoing = connect(Number(port || 80), hostname);
    track(incoming);
    track(outgoing);
    incoming.pipe(outgoing);
    outgoing.pipe(incoming);
    incoming.once("close", () => outgoing.destroy());
    outgoing.once("close", () => incoming.destroy());
    incoming.on("error", () => outgoing.destroy());
    outgoing.on("error", () => incoming.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as AddressInfo;
  const cutAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${address.port}`,
    setDown: (value) => {
      down = value;
      if (down) cutAll();
    },
    close: () =>
      new Promise<void>((resolve) => {
        cutAll();
        server.close(() => resolve());
      }),
  };
}

/**
 * Saves a screenshot as test-artifacts/web/<name>.png and returns its path. The viewport by
 * default: full-page shots draw sticky bars (top bar, composer) in the middle of the page.
 */
export async function screenshot(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<string> {
  await mkdir(artifactsDir, { recursive: true });
  const file = path.join(artifactsDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: options.fullPage ?? false });
  return file;
}

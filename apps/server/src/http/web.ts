// The web IDE at `/`: the Vite build in `webDir`, with index.html for client routes (a reload of
// /projects/:id must load the app). API, socket and operations paths keep their own 404s.
import { existsSync } from "node:fs";
import path from "node:path";
import fastifyStatic from "@fastify/static";
import { UserError } from "@gadget/protocol";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { registerSecurityHeaders } from "./security-headers.ts";

const serverPaths = /^\/(api|socket\.io)(\/|$)|^\/(healthz|readyz|metrics)$/;
const oneYear = 365 * 24 * 3600;

/** True when `pathname` belongs to the server rather than the web IDE. */
export function isServerPath(pathname: string): boolean {
  return serverPaths.test(pathname);
}

/**
 * Serves the web build, or, when there is none, a page that says how to build it; every answer
 * of `app` (the API's too) gets the security headers. Vite names assets by content hash, so they
 * are cached for a year; index.html never is.
 */
export function registerWebApp(app: FastifyInstance, webDir: string | null): void {
  registerSecurityHeaders(app);
  const built = webDir !== null && existsSync(path.join(webDir, "index.html"));
  if (built) {
    app.register(fastifyStatic, {
      root: webDir,
      // Files are listed at start (the build does not change under a running server), so
      // unknown paths fall through to the not-found handler below instead of a wildcard route.
      wildcard: false,
      index: false,
      // Our cache-control, not the plugin's max-age=0 default.
      cacheControl: false,
      setHeaders: (reply, filePath) => {
        const immutable = filePath.includes(`${path.sep}assets${path.sep}`);
        reply.header(
          "cache-control",
          immutable ? `public, max-age=${oneYear}, immutable` : "no-cache",
        );
      },
    });
  }

  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const pathname = request.url.split("?")[0] ?? "/";
    const wantsPage =
      (request.method === "GET" || request.method === "HEAD") &&
      !isServerPath(pathname) &&
      !path.extname(pathname);
    if (wantsPage && built) {
      reply.header("cache-control", "no-cache");
      return reply.type("text/html; charset=utf-8").sendFile("index.html");
    }
    if (wantsPage) {
      return reply
        .status(404)
        .type("text/plain; charset=utf-8")
        .send(
          // No path: the page is public, and where the server is installed helps only an attacker.
          "The web IDE is not built.\n" +
            "Build it with `pnpm --filter @gadget/web build`, or run `pnpm start`, which builds it.\n" +
            "The API is at /api.\n",
        );
    }
    return reply
      .status(404)
      .send(new UserError("not_found", `No route ${request.method} ${pathname}`).toJSON());
  });
}

// Browser-side defences on every answer: a Content-Security-Policy, nosniff, no framing and no
// referrer, so that model output rendered in the IDE cannot load, send or frame anything elsewhere.
import type { FastifyInstance } from "fastify";

/**
 * The IDE loads everything from its own origin. Relaxations, each needed by the app:
 * - `style-src 'unsafe-inline'`: CodeMirror (style-mod) adds `<style>` elements at run time and
 *   the app's bundle sets inline `style` attributes (layout widths, the virtual list); a nonce
 *   would mean templating index.html per request and would not cover attributes. Model output
 *   keeps no `<style>` and no `style` attribute (the markdown sanitiser), and `img-src`/`font-src`
 *   keep CSS from loading anything remote, so inline CSS cannot beacon.
 * - `img-src`/`font-src data:`: small images and fonts that CSS bundles inline.
 * `connect-src 'self'` also covers the same-origin Socket.IO WebSocket (CSP3 matches ws: to
 * 'self'). `form-action 'none'`: the app's forms are handled by script, never submitted.
 */
export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * The headers every answer carries. `no-referrer` rather than `strict-origin-when-cross-origin`:
 * nothing in the IDE needs a Referer, and page URLs name projects and sessions.
 */
export const securityHeaders: Readonly<Record<string, string>> = {
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
};

/**
 * Adds the security headers to every response of `app` (pages, files, API answers and errors)
 * that has not set its own. Call before the app is ready so that every route inherits the hook.
 * @example registerSecurityHeaders(app); // inside the composition of the Fastify app
 */
export function registerSecurityHeaders(app: FastifyInstance): void {
  app.addHook("onSend", async (_request, reply, payload) => {
    for (const [name, value] of Object.entries(securityHeaders)) {
      if (!reply.hasHeader(name)) reply.header(name, value);
    }
    return payload;
  });
}

// The raw text of the request bodies whose signature is checked over their exact bytes (the
// forge's webhooks): kept by the JSON parser beside the parsed body, for those paths only.
import type { FastifyRequest } from "fastify";

const rawBodies = new WeakMap<FastifyRequest, string>();
const signedPaths = /^\/api\/forge-events\//;

/** Keeps `text` as the raw body of `request` when its path is signed. */
export function keepRawBody(request: FastifyRequest, text: string): void {
  if (signedPaths.test(request.url)) rawBodies.set(request, text);
}

/** The raw body kept for `request`; "" when there was none. */
export function rawBodyOf(request: FastifyRequest): string {
  return rawBodies.get(request) ?? "";
}

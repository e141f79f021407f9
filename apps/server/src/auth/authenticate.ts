// Bearer tokens → the user they belong to. The user id always comes from here, never from a body.
import { UserError } from "@gadget/protocol";
import type { FastifyRequest } from "fastify";
import type { ServerContext } from "../context.ts";
import { sha256 } from "../crypto/tokens.ts";

/** The user id of a token, or null. */
export async function authenticateToken(
  context: ServerContext,
  token: string,
): Promise<string | null> {
  const found = await context.models.ApiToken.findById(sha256(token)).select({ user: 1 }).lean();
  return found ? String(found.user) : null;
}

/** The bearer token of a request, if any. */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  return match?.[1] ?? null;
}

/** The authenticated user's id; 401 otherwise. */
export async function requireUser(
  context: ServerContext,
  request: FastifyRequest,
): Promise<string> {
  const token = bearerToken(request);
  if (!token) {
    throw new UserError("unauthorized", "Missing bearer token: send Authorization: Bearer <token>");
  }
  const userId = await authenticateToken(context, token);
  if (!userId) throw new UserError("unauthorized", "Invalid token: log in again");
  request.userId = userId;
  return userId;
}

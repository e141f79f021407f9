// Bearer tokens → the user they belong to. The user id always comes from here, never from a body.
import { UserError } from "@gadget/protocol";
import type { FastifyRequest } from "fastify";
import type { SignIns } from "./sign-ins.ts";

/** The user id of a token that has not expired, or null. */
export async function authenticateToken(
  dependencies: { signIns: SignIns },
  token: string,
): Promise<string | null> {
  return (await dependencies.signIns.authenticate(token))?.userId ?? null;
}

/** The bearer token of a request, if any. */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  return match?.[1] ?? null;
}

/** The authenticated user's id, also set as `request.userId`; 401 otherwise. */
export async function requireUser(
  dependencies: { signIns: SignIns },
  request: FastifyRequest,
): Promise<string> {
  const token = bearerToken(request);
  if (!token) {
    throw new UserError("unauthorized", "Missing bearer token: send Authorization: Bearer <token>");
  }
  const userId = await authenticateToken(dependencies, token);
  if (!userId) throw new UserError("unauthorized", "Invalid token: log in again");
  request.userId = userId;
  return userId;
}

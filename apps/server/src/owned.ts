// Ownership checks. Objects are read by _id (the only lookup FerretDB v1 serves from an index) and
// then checked against the authenticated user: another user's object reads as absent.
import type { ChatSessionDocument, Models } from "@gadget/db";
import { UserError } from "@gadget/protocol";

/** `document` if it belongs to `userId`, else null. */
export function ownedBy<T extends { user: unknown }>(
  document: T | null | undefined,
  userId: string,
): T | null {
  return document && String(document.user) === userId ? document : null;
}

/** The user's whole session, or `not_found` (another user's session reads as absent). */
export async function ownedSession(
  models: Models,
  userId: string,
  sessionId: string,
): Promise<ChatSessionDocument> {
  const session = ownedBy(
    await models.ChatSession.findById(sessionId).lean<ChatSessionDocument>(),
    userId,
  );
  if (!session) throw new UserError("not_found", "Session not found");
  return session;
}

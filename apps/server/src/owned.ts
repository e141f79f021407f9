// Ownership checks. Objects are read by _id (the only lookup FerretDB v1 serves from an index) and
// then checked against the authenticated user: another user's object reads as absent.

/** `document` if it belongs to `userId`, else null. */
export function ownedBy<T extends { user: unknown }>(
  document: T | null | undefined,
  userId: string,
): T | null {
  return document && String(document.user) === userId ? document : null;
}

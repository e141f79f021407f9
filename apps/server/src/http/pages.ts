// Cursor pagination of list routes: `?cursor=<last id>&limit=`, in id order (ids grow with
// creation time), answered with `nextCursor` (null on the last page). A list never grows past
// one page per request, however much a user has.
import type { PageQuery } from "@gadget/protocol";
import { Types } from "mongoose";

export interface Page {
  /** Merge into the list's filter. */
  filter: { _id?: { $gt: Types.ObjectId } };
  /** One more than the page holds: whether another page follows is seen without a count. */
  fetch: number;
  limit: number;
}

/**
 * The page a request asks for (its query, as the contract's `pageQuerySchema` parsed it).
 * @example const page = pageOf(request.query); const rows = await Model.find({ user, ...page.filter }).sort({ _id: 1 }).limit(page.fetch).lean();
 */
export function pageOf({ cursor, limit }: PageQuery): Page {
  return {
    filter: cursor ? { _id: { $gt: new Types.ObjectId(cursor) } } : {},
    fetch: limit + 1,
    limit,
  };
}

/** The rows of the page and the cursor of the next one. */
export function pageRows<T extends { _id: unknown }>(
  page: Page,
  rows: T[],
): { rows: T[]; nextCursor: string | null } {
  if (rows.length <= page.limit) return { rows, nextCursor: null };
  const shown = rows.slice(0, page.limit);
  return { rows: shown, nextCursor: String(shown.at(-1)?._id) };
}

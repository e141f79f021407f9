// The git branch a session works on: `<branchPrefix><session-slug>-<first 6 characters of its id>`,
// named here so the server, the drone and the web IDE agree on it.
import { z } from "zod";

/** The prefix of every session branch unless the project says otherwise. */
export const DEFAULT_BRANCH_PREFIX = "gadget/";

/**
 * A project's branch prefix: empty, or letters, digits, `.`, `_`, `-` and `/` that git accepts at
 * the start of a branch name (no `..`, `//`, leading `/`, `-` or `.`, nor a part ending `.lock`).
 */
export const branchPrefixSchema = z
  .string()
  .trim()
  .max(100)
  .regex(/^(?:[A-Za-z0-9_][A-Za-z0-9._-]*\/?)*$/, "may hold letters, digits, '.', '_', '-' and '/'")
  .refine(
    (prefix) =>
      !prefix.includes("..") && !/\.lock(?:\/|$)/.test(prefix) && !/\.(?:\/|$)/.test(prefix),
    "is not a valid start of a git branch name",
  );

/** "Fix the Login page!" → "fix-the-login-page"; `fallback` when nothing is left. */
export function slugify(name: string, fallback = "project", maxLength = 60): string {
  const slug = name
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, maxLength)
    .replace(/-+$/, "");
  return slug || fallback;
}

/**
 * The branch of a session. `idLength` grows only when a shorter name is taken by another session
 * (ids made in the same few minutes share their first characters).
 * @example sessionBranch("gadget/", { _id: "665f1c2e9b1d4a0012345678", name: "Fix login" }) // "gadget/fix-login-665f1c"
 */
export function sessionBranch(
  prefix: string,
  session: { _id: string; name: string },
  idLength = 6,
): string {
  return `${prefix}${slugify(session.name, "session", 40)}-${session._id.slice(0, idLength)}`;
}

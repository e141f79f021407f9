// Which repository on the forge a project is: read from its git URL, in the https and ssh forms
// people paste (`https://host/owner/repo.git`, `git@host:owner/repo.git`, `ssh://git@host:22/…`).
import { FORGE_NAMES, type ForgeKind } from "./delivery.ts";
import { UserError } from "./errors.ts";

/** A repository as its forge's API names it. */
export interface ForgeRepository {
  /** `owner/repo` (GitHub, Gitea) or `group/sub/project` (GitLab): for messages. */
  name: string;
  /** The API path of the repository: `/repos/owner/repo` or `/projects/group%2Fsub%2Fproject`. */
  apiPath: string;
  /** The owner (GitHub's `head` filter names it: `owner:branch`). */
  owner: string;
  /** The repository's own name (the last path segment). */
  repo: string;
}

/** The path segments of a git URL, without `.git` or credentials; null when it has none. */
export function gitUrlPath(gitUrl: string): string[] | null {
  const text = gitUrl.trim();
  let path: string;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    try {
      path = new URL(text).pathname;
    } catch {
      return null;
    }
  } else {
    // scp-like: [user@]host:path (not a Windows drive or a local path).
    const match = /^(?:[^@/\s]+@)?[^:/\s\\]{2,}:(?!\/)(.+)$/.exec(text);
    if (!match?.[1]) return null;
    path = match[1];
  }
  const segments = path
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .split("/")
    .filter(Boolean)
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    });
  return segments.length > 0 ? segments : null;
}

/**
 * The repository `gitUrl` names on a forge of `kind`: GitHub's and Gitea's last two path segments
 * (owner and repository), GitLab's whole path (nested groups), URL-encoded as one segment.
 * @example forgeRepository("gitlab", "git@gitlab.com:acme/web/app.git").apiPath // "/projects/acme%2Fweb%2Fapp"
 */
export function forgeRepository(kind: ForgeKind, gitUrl: string): ForgeRepository {
  const segments = gitUrlPath(gitUrl);
  if (kind === "github" || kind === "gitea") {
    const [owner, repo] = segments?.slice(-2) ?? [];
    if (!owner || !repo || (segments?.length ?? 0) < 2) {
      throw new UserError(
        "validation_failed",
        `The project's git URL names no ${FORGE_NAMES[kind]} repository (owner/repo): ${withoutCredentials(gitUrl)}`,
      );
    }
    return {
      name: `${owner}/${repo}`,
      apiPath: `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`,
      owner,
      repo,
    };
  }
  if (!segments || segments.length < 2) {
    throw new UserError(
      "validation_failed",
      `The project's git URL names no GitLab project (group/project): ${withoutCredentials(gitUrl)}`,
    );
  }
  const name = segments.join("/");
  return {
    name,
    apiPath: `/projects/${encodeURIComponent(name)}`,
    owner: segments[0] ?? "",
    repo: segments.at(-1) ?? "",
  };
}

/** Removes `user:password@` from a URL. */
function withoutCredentials(text: string): string {
  return text.replace(/(\w+:\/\/)[^/@\s]+@/g, "$1");
}

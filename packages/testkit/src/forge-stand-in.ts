// A loopback stand-in of the two forges' REST APIs that open pull requests: GitHub's pulls
// (`/api/v3`, GitHub Enterprise Server's layout) and GitLab's merge requests (`/api/v4`). Forges
// are not reachable from the machines tests run on, so this speaks their wire format: it checks the
// token header and the JSON each API requires, refuses as they do, and answers with their shapes.
// The shapes follow the recorded answers quoted in public issue threads and client libraries:
// GitHub's 422 "A pull request already exists for owner:branch." (github/VisualStudio#453,
// google/go-github#1441), `{"resource":"PullRequest","field":"head","code":"invalid"}`
// (spdx/spdx-online-tools#425), GitLab's 409 "Another open merge request already exists for this
// source branch: !38" (voxpupuli/modulesync#195) and its merge request fields (gitlabhq's
// doc/api/merge_requests.md).
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ForgeStandInOptions {
  /** The token each API accepts. */
  token: string;
  /** Repositories that exist: GitHub `owner/repo`, GitLab `group/sub/project`. Others answer 404. */
  repositories: string[];
  /** Whether `branch` exists in `repository` (GitHub refuses a pull request of a missing head). Default: every branch does. */
  branchExists?: (repository: string, branch: string) => boolean;
  /** Answer GitHub's pull list whatever its `head=` filter says, as Gitea does. */
  ignoreHeadFilter?: boolean;
  /** GitHub: each user's permission on every repository (others: `none`). */
  permissions?: Record<string, "admin" | "maintain" | "write" | "read" | "none">;
  /** GitLab: each user id's access level on every project (others: not a member, 404). */
  members?: Record<number, number>;
}

/** A comment (GitLab: note) on an issue or pull request, as the stand-in keeps it. */
export interface StandInComment {
  repository: string;
  /** The or pull request's number (GitLab: iid). */
  number: number;
  id: number;
  body: string;
}

/** A pull request (GitLab: merge request) as the stand-in keeps it. */
export interface StandInPullRequest {
  repository: string;
  number: number;
  title: string;
  body: string;
  head: string;
  base: string;
  state: "open" | "closed";
}

/** One request the stand-in answered (never with its headers: they hold the token). */
export interface StandInRequest {
  method: string;
  path: string;
  status: number;
}

export interface ForgeStandIn {
  url: string;
  /** Where GitHub's REST API is: `${url}/api/v3`. */
  githubApiUrl: string;
  /** Where GitLab's REST API is: `${url}/api/v4`. */
  gitlabApiUrl: string;
  /** Every pull request, in the order they were opened. */
  pullRequests: () => StandInPullRequest[];
  /** Every request answered so far. */
  requests: () => StandInRequest[];
  /** Every comment posted through the API, as last edited. */
  comments: () => StandInComment[];
  /** Closes a pull request, as a person merging or closing it on the forge would. */
  close: (repository: string, number: number) => void;
  stop: () => Promise<void>;
}

const maxBody = 1024 * 1024;
const githubDocs = "https://docs.github.com/rest/pulls/pulls";

class Answer {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

/**
 * Starts the stand-in on a loopback port.
 * @example const forge = await startForgeStandIn({ token: "ghp_x", repositories: ["ada/app"] }); // forge.githubApiUrl
 */
export async function startForgeStandIn(options: ForgeStandInOptions): Promise<ForgeStandIn> {
  const pulls: StandInPullRequest[] = [];
  const requests: StandInRequest[] = [];
  const comments: StandInComment[] = [];
  const numbers = new Map<string, number>();
  const server = createServer((request, response) => {
    void handle(request).then(
      (answer) => send(request, response, answer),
      (error: unknown) =>
        send(
          request,
          response,
          error instanceof Answer ? error : new Answer(500, { message: String(error) }),
        ),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  function send(request: IncomingMessage, response: ServerResponse, answer: Answer): void {
    requests.push({
      method: request.method ?? "GET",
      path: (request.url ?? "/").split("?")[0] ?? "/",
      status: answer.status,
    });
    response
      .writeHead(answer.status, { "content-type": "application/json; charset=utf-8" })
      .end(JSON.stringify(answer.body));
  }

  async function handle(request: IncomingMessage): Promise<Answer> {
    const target = new URL(request.url ?? "/", url);
    // The raw path: GitLab's project id is one URL-encoded segment (`group%2Fapp`).
    const segments = (request.url ?? "/").split("?")[0]?.split("/").filter(Boolean) ?? [];
    const text = await readBody(request);
    if (segments[0] === "api" && segments[1] === "v3") {
      return github(request, segments.slice(2), target.searchParams, text);
    }
    if (segments[0] === "api" && segments[1] === "v4") {
      return gitlab(request, segments.slice(2), target.searchParams, text);
    }
    return new Answer(404, { message: "Not Found" });
  }

  function nextNumber(repository: string): number {
    const next = (numbers.get(repository) ?? 0) + 1;
    numbers.set(repository, next);
    return next;
  }

  // GitHub's collaborator permission (https://docs.github.com/rest/collaborators/collaborators)
  // and issue comments (https://docs.github.com/rest/issues/comments), which Gitea answers alike.
  function githubComments(
    method: string,
    repository: string,
    path: string[],
    text: string,
  ): Answer | null {
    const [resource, first, second, third] = path;
    if (resource === "collaborators" && second === "permission" && method === "GET") {
      const permission = options.permissions?.[first ?? ""] ?? "none";
      return new Answer(200, { permission, user: { login: first } });
    }
    if (resource !== "issues") return null;
    if (first === "comments" && second && third === undefined && method === "PATCH") {
      const comment = comments.find(
        (entry) => entry.repository === repository && String(entry.id) === second,
      );
      if (!comment) return new Answer(404, { message: "Not Found" });
      comment.body = String(githubJson(text).body ?? "");
      return new Answer(200, { id: comment.id, body: comment.body });
    }
    if (first && second === "comments" && third === undefined && method === "POST") {
      const comment: StandInComment = {
        repository,
        number: Number(first),
        id: 5000 + comments.length + 1,
        body: String(githubJson(text).body ?? ""),
      };
      comments.push(comment);
      return new Answer(201, {
        id: comment.id,
        body: comment.body,
        html_url: `${url}/${repository}/issues/${first}#issuecomment-${comment.id}`,
      });
    }
    return null;
  }

  // GitHub: https://docs.github.com/rest/pulls/pulls
  function github(
    request: IncomingMessage,
    path: string[],
    query: URLSearchParams,
    text: string,
  ): Answer {
    if (!request.headers["user-agent"]) {
      return new Answer(403, {
        message:
          "Request forbidden by administrative rules. Please make sure your request has a User-Agent header",
      });
    }
    const authorization = request.headers.authorization ?? "";
    if (authorization !== `Bearer ${options.token}` && authorization !== `token ${options.token}`) {
      return new Answer(401, {
        message: "Bad credentials",
        documentation_url: "https://docs.github.com/rest",
        status: "401",
      });
    }
    const [repos, owner, repo, resource, number, ...rest] = path;
    const repository = `${owner}/${repo}`;
    const extra =
      repos === "repos" && options.repositories.includes(repository)
        ? githubComments(request.method ?? "GET", repository, path.slice(3), text)
        : null;
    if (extra) return extra;
    if (
      repos !== "repos" ||
      resource !== "pulls" ||
      rest.length > 0 ||
      !options.repositories.includes(repository)
    ) {
      return new Answer(404, {
        message: "Not Found",
        documentation_url: "https://docs.github.com/rest",
        status: "404",
      });
    }
    const method = request.method ?? "GET";
    if (number === undefined && method === "GET") {
      const head = query.get("head");
      const state = query.get("state") ?? "open";
      return new Answer(
        200,
        pulls
          .filter(
            (pull) =>
              pull.repository === repository &&
              (state === "all" || pull.state === state) &&
              (!head || options.ignoreHeadFilter || `${owner}:${pull.head}` === head),
          )
          .map(githubPull),
      );
    }
    if (number === undefined && method === "POST") {
      const body = githubJson(text);
      const errors: Array<Record<string, string>> = [];
      for (const field of ["title", "head", "base"]) {
        if (body[field] === undefined) {
          errors.push({ resource: "PullRequest", field, code: "missing_field" });
        } else if (typeof body[field] !== "string") {
          errors.push({ resource: "PullRequest", field, code: "invalid" });
        }
      }
      if (body.body !== undefined && body.body !== null && typeof body.body !== "string") {
        errors.push({ resource: "PullRequest", field: "body", code: "invalid" });
      }
      const head = String(body.head ?? "");
      const base = String(body.base ?? "");
      if (errors.length === 0) {
        const exists = options.branchExists ?? (() => true);
        if (!exists(repository, head)) {
          errors.push({ resource: "PullRequest", field: "head", code: "invalid" });
        }
        if (!exists(repository, base)) {
          errors.push({ resource: "PullRequest", field: "base", code: "invalid" });
        }
      }
      if (errors.length === 0 && head === base) {
        errors.push({
          resource: "PullRequest",
          code: "custom",
          message: `No commits between ${base} and ${head}`,
        });
      }
      if (
        errors.length === 0 &&
        pulls.some(
          (pull) => pull.repository === repository && pull.head === head && pull.state === "open",
        )
      ) {
        errors.push({
          resource: "PullRequest",
          code: "custom",
          message: `A pull request already exists for ${owner}:${head}.`,
        });
      }
      if (errors.length > 0) {
        return new Answer(422, {
          message: "Validation Failed",
          errors,
          documentation_url: `${githubDocs}#create-a-pull-request`,
          status: "422",
        });
      }
      const pull: StandInPullRequest = {
        repository,
        number: nextNumber(repository),
        title: String(body.title),
        body: typeof body.body === "string" ? body.body : "",
        head,
        base,
        state: "open",
      };
      pulls.push(pull);
      return new Answer(201, githubPull(pull));
    }
    const pull = pulls.find(
      (entry) => entry.repository === repository && String(entry.number) === number,
    );
    if (!pull || (method !== "GET" && method !== "PATCH")) {
      return new Answer(404, {
        message: "Not Found",
        documentation_url: `${githubDocs}#update-a-pull-request`,
        status: "404",
      });
    }
    if (method === "PATCH") {
      const body = githubJson(text);
      const errors: Array<Record<string, string>> = [];
      for (const field of ["title", "body", "base"]) {
        if (body[field] !== undefined && typeof body[field] !== "string") {
          errors.push({ resource: "PullRequest", field, code: "invalid" });
        }
      }
      if (body.state !== undefined && body.state !== "open" && body.state !== "closed") {
        errors.push({ resource: "PullRequest", field: "state", code: "invalid" });
      }
      if (errors.length > 0) {
        return new Answer(422, {
          message: "Validation Failed",
          errors,
          documentation_url: `${githubDocs}#update-a-pull-request`,
          status: "422",
        });
      }
      if (typeof body.title === "string") pull.title = body.title;
      if (typeof body.body === "string") pull.body = body.body;
      if (typeof body.base === "string") pull.base = body.base;
      if (body.state === "open" || body.state === "closed") pull.state = body.state;
    }
    return new Answer(200, githubPull(pull));
  }

  /** A pull request as GitHub answers it (the fields clients read; GitHub sends many more). */
  function githubPull(pull: StandInPullRequest) {
    const [owner] = pull.repository.split("/");
    const at = new Date().toISOString();
    return {
      url: `${url}/api/v3/repos/${pull.repository}/pulls/${pull.number}`,
      id: 1_000_000 + pull.number,
      node_id: `PR_standin${pull.number}`,
      html_url: `${url}/${pull.repository}/pull/${pull.number}`,
      diff_url: `${url}/${pull.repository}/pull/${pull.number}.diff`,
      number: pull.number,
      state: pull.state,
      locked: false,
      title: pull.title,
      body: pull.body,
      user: { login: owner, type: "User" },
      created_at: at,
      updated_at: at,
      closed_at: pull.state === "closed" ? at : null,
      merged_at: null,
      draft: false,
      head: { label: `${owner}:${pull.head}`, ref: pull.head },
      base: { label: `${owner}:${pull.base}`, ref: pull.base },
    };
  }

  // GitLab: https://docs.gitlab.com/api/merge_requests/
  function gitlab(
    request: IncomingMessage,
    path: string[],
    query: URLSearchParams,
    text: string,
  ): Answer {
    const token =
      request.headers["private-token"] ??
      (request.headers.authorization?.startsWith("Bearer ")
        ? request.headers.authorization.slice(7)
        : undefined);
    if (token !== options.token) return new Answer(401, { message: "401 Unauthorized" });
    const [projects, id, resource, iid, ...rest] = path;
    const repository = decodeURIComponent(id ?? "");
    if (projects !== "projects" || !options.repositories.includes(repository)) {
      return new Answer(404, { message: "404 Project Not Found" });
    }
    const requestMethod = request.method ?? "GET";
    // Members (https://docs.gitlab.com/api/members/) and notes (https://docs.gitlab.com/api/notes/).
    if (resource === "members" && iid === "all" && rest.length === 1 && requestMethod === "GET") {
      const level = options.members?.[Number(rest[0])];
      return level === undefined
        ? new Answer(404, { message: "404 Not found" })
        : new Answer(200, { id: Number(rest[0]), access_level: level });
    }
    if (
      (resource === "issues" || resource === "merge_requests") &&
      iid &&
      rest[0] === "notes" &&
      rest.length <= 2
    ) {
      const body = String(gitlabJson(text).body ?? "");
      if (rest.length === 1 && requestMethod === "POST") {
        const note = { repository, number: Number(iid), id: 7000 + comments.length + 1, body };
        comments.push(note);
        return new Answer(201, { id: note.id, body, noteable_iid: note.number });
      }
      const note = comments.find(
        (entry) => entry.repository === repository && String(entry.id) === rest[1],
      );
      if (rest.length === 2 && requestMethod === "PUT" && note) {
        note.body = body;
        return new Answer(200, { id: note.id, body });
      }
      return new Answer(404, { message: "404 Not found" });
    }
    if (resource !== "merge_requests" || rest.length > 0) {
      return new Answer(404, { error: "404 Not Found" });
    }
    const method = request.method ?? "GET";
    if (iid === undefined && method === "GET") {
      const source = query.get("source_branch");
      const state = query.get("state") ?? "all";
      return new Answer(
        200,
        pulls
          .filter(
            (pull) =>
              pull.repository === repository &&
              (state === "all" || (state === "opened") === (pull.state === "open")) &&
              (!source || pull.head === source),
          )
          .reverse()
          .map(gitlabMergeRequest),
      );
    }
    if (iid === undefined && method === "POST") {
      const body = gitlabJson(text);
      const missing = ["source_branch", "target_branch", "title"].filter(
        (field) => typeof body[field] !== "string" || body[field] === "",
      );
      if (missing.length > 0) {
        return new Answer(400, { error: missing.map((field) => `${field} is missing`).join(", ") });
      }
      if (body.description !== undefined && typeof body.description !== "string") {
        return new Answer(400, { error: "description is invalid" });
      }
      const head = String(body.source_branch);
      const open = pulls.find(
        (pull) => pull.repository === repository && pull.head === head && pull.state === "open",
      );
      if (open) {
        return new Answer(409, {
          message: [
            `Another open merge request already exists for this source branch: !${open.number}`,
          ],
        });
      }
      const pull: StandInPullRequest = {
        repository,
        number: nextNumber(repository),
        title: String(body.title),
        body: typeof body.description === "string" ? body.description : "",
        head,
        base: String(body.target_branch),
        state: "open",
      };
      pulls.push(pull);
      return new Answer(201, gitlabMergeRequest(pull));
    }
    const pull = pulls.find(
      (entry) => entry.repository === repository && String(entry.number) === iid,
    );
    if (!pull || (method !== "GET" && method !== "PUT")) {
      return new Answer(404, { message: "404 Not found" });
    }
    if (method === "PUT") {
      const body = gitlabJson(text);
      for (const field of ["title", "description", "target_branch"]) {
        if (body[field] !== undefined && typeof body[field] !== "string") {
          return new Answer(400, { error: `${field} is invalid` });
        }
      }
      if (typeof body.title === "string") pull.title = body.title;
      if (typeof body.description === "string") pull.body = body.description;
      if (typeof body.target_branch === "string") pull.base = body.target_branch;
      if (body.state_event === "close") pull.state = "closed";
      if (body.state_event === "reopen") pull.state = "open";
    }
    return new Answer(200, gitlabMergeRequest(pull));
  }

  /** A merge request as GitLab answers it (the fields clients read; GitLab sends many more). */
  function gitlabMergeRequest(pull: StandInPullRequest) {
    const at = new Date().toISOString();
    return {
      id: 1_000_000 + pull.number,
      iid: pull.number,
      project_id: 1 + options.repositories.indexOf(pull.repository),
      title: pull.title,
      description: pull.body,
      state: pull.state === "open" ? "opened" : "closed",
      created_at: at,
      updated_at: at,
      target_branch: pull.base,
      source_branch: pull.head,
      author: { id: 1, username: "ada", name: "Ada" },
      draft: false,
      merge_status: "can_be_merged",
      references: { short: `!${pull.number}`, full: `${pull.repository}!${pull.number}` },
      web_url: `${url}/${pull.repository}/-/merge_requests/${pull.number}`,
    };
  }

  return {
    url,
    githubApiUrl: `${url}/api/v3`,
    gitlabApiUrl: `${url}/api/v4`,
    pullRequests: () => pulls.map((pull) => ({ ...pull })),
    requests: () => [...requests],
    comments: () => comments.map((comment) => ({ ...comment })),
    close: (repository, number) => {
      const pull = pulls.find(
        (entry) => entry.repository === repository && entry.number === number,
      );
      if (pull) pull.state = "closed";
    },
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBody) throw new Answer(413, { message: "Payload Too Large" });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A GitHub request body: a JSON object, else GitHub's 400. */
function githubJson(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || "{}");
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // Answered below, as GitHub does.
  }
  throw new Answer(400, {
    message: "Problems parsing JSON",
    documentation_url: githubDocs,
    status: "400",
  });
}

/** A GitLab request body: a JSON object, else GitLab's 400. */
function gitlabJson(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || "{}");
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      return parsed as Record<string, unknown>;
    }
  } catch {
    // Answered below, as GitLab does.
  }
  throw new Answer(400, { error: "The provided content-type is not supported." });
}

// The forge stand-in's GitHub API (`/api/v3`, GitHub Enterprise Server's layout): pulls, issue
// comments and collaborator permissions, as GitHub answers and refuses them (Gitea answers alike).
import type { IncomingMessage } from "node:http";
import {
  Answer,
  githubDocs,
  githubJson,
  type StandInComment,
  type StandInPullRequest,
  type StandInState,
} from "./forge-stand-in-wire.ts";

// GitHub's collaborator permission (https://docs.github.com/rest/collaborators/collaborators)
// and issue comments (https://docs.github.com/rest/issues/comments), which Gitea answers alike.
function githubComments(
  state: StandInState,
  method: string,
  repository: string,
  path: string[],
  text: string,
): Answer | null {
  const [resource, first, second, third] = path;
  if (resource === "collaborators" && second === "permission" && method === "GET") {
    const permission = state.options.permissions?.[first ?? ""] ?? "none";
    return new Answer(200, { permission, user: { login: first } });
  }
  if (resource !== "issues") return null;
  if (first === "comments" && second && third === undefined && method === "PATCH") {
    const comment = state.comments.find(
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
      id: 5000 + state.comments.length + 1,
      body: String(githubJson(text).body ?? ""),
    };
    state.comments.push(comment);
    return new Answer(201, {
      id: comment.id,
      body: comment.body,
      html_url: `${state.url}/${repository}/issues/${first}#issuecomment-${comment.id}`,
    });
  }
  return null;
}

// GitHub: https://docs.github.com/rest/pulls/pulls
export function github(
  state: StandInState,
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
  if (
    authorization !== `Bearer ${state.options.token}` &&
    authorization !== `token ${state.options.token}`
  ) {
    return new Answer(401, {
      message: "Bad credentials",
      documentation_url: "https://docs.github.com/rest",
      status: "401",
    });
  }
  const [repos, owner, repo, resource, number, ...rest] = path;
  const repository = `${owner}/${repo}`;
  const extra =
    repos === "repos" && state.options.repositories.includes(repository)
      ? githubComments(state, request.method ?? "GET", repository, path.slice(3), text)
      : null;
  if (extra) return extra;
  if (
    repos !== "repos" ||
    resource !== "pulls" ||
    rest.length > 0 ||
    !state.options.repositories.includes(repository)
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
    const wanted = query.get("state") ?? "open";
    return new Answer(
      200,
      state.pulls
        .filter(
          (pull) =>
            pull.repository === repository &&
            (wanted === "all" || pull.state === wanted) &&
            (!head || state.options.ignoreHeadFilter || `${owner}:${pull.head}` === head),
        )
        .map((pull) => githubPull(state, pull)),
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
      const exists = state.options.branchExists ?? (() => true);
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
      state.pulls.some(
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
      number: state.nextNumber(repository),
      title: String(body.title),
      body: typeof body.body === "string" ? body.body : "",
      head,
      base,
      state: "open",
    };
    state.pulls.push(pull);
    return new Answer(201, githubPull(state, pull));
  }
  const pull = state.pulls.find(
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
  return new Answer(200, githubPull(state, pull));
}

/** A pull request as GitHub answers it (the fields clients read; GitHub sends many more). */
function githubPull(state: StandInState, pull: StandInPullRequest) {
  const [owner] = pull.repository.split("/");
  const at = new Date().toISOString();
  return {
    url: `${state.url}/api/v3/repos/${pull.repository}/pulls/${pull.number}`,
    id: 1_000_000 + pull.number,
    node_id: `PR_standin${pull.number}`,
    html_url: `${state.url}/${pull.repository}/pull/${pull.number}`,
    diff_url: `${state.url}/${pull.repository}/pull/${pull.number}.diff`,
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

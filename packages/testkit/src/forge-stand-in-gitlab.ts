// The forge stand-in's GitLab API (`/api/v4`): merge requests, notes and members, as GitLab
// answers and refuses them.
import type { IncomingMessage } from "node:http";
import {
  Answer,
  gitlabJson,
  type StandInPullRequest,
  type StandInState,
} from "./forge-stand-in-wire.ts";

// GitLab: https://docs.gitlab.com/api/merge_requests/
export function gitlab(
  state: StandInState,
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
  if (token !== state.options.token) return new Answer(401, { message: "401 Unauthorized" });
  const [projects, id, resource, iid, ...rest] = path;
  const repository = decodeURIComponent(id ?? "");
  if (projects !== "projects" || !state.options.repositories.includes(repository)) {
    return new Answer(404, { message: "404 Project Not Found" });
  }
  const requestMethod = request.method ?? "GET";
  // Members (https://docs.gitlab.com/api/members/) and notes (https://docs.gitlab.com/api/notes/).
  if (resource === "members" && iid === "all" && rest.length === 1 && requestMethod === "GET") {
    const level = state.options.members?.[Number(rest[0])];
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
      const note = { repository, number: Number(iid), id: 7000 + state.comments.length + 1, body };
      state.comments.push(note);
      return new Answer(201, { id: note.id, body, noteable_iid: note.number });
    }
    const note = state.comments.find(
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
    const wanted = query.get("state") ?? "all";
    return new Answer(
      200,
      state.pulls
        .filter(
          (pull) =>
            pull.repository === repository &&
            (wanted === "all" || (wanted === "opened") === (pull.state === "open")) &&
            (!source || pull.head === source),
        )
        .reverse()
        .map((pull) => gitlabMergeRequest(state, pull)),
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
    const open = state.pulls.find(
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
      number: state.nextNumber(repository),
      title: String(body.title),
      body: typeof body.description === "string" ? body.description : "",
      head,
      base: String(body.target_branch),
      state: "open",
    };
    state.pulls.push(pull);
    return new Answer(201, gitlabMergeRequest(state, pull));
  }
  const pull = state.pulls.find(
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
  return new Answer(200, gitlabMergeRequest(state, pull));
}

/** A merge request as GitLab answers it (the fields clients read; GitLab sends many more). */
function gitlabMergeRequest(state: StandInState, pull: StandInPullRequest) {
  const at = new Date().toISOString();
  return {
    id: 1_000_000 + pull.number,
    iid: pull.number,
    project_id: 1 + state.options.repositories.indexOf(pull.repository),
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
    web_url: `${state.url}/${pull.repository}/-/merge_requests/${pull.number}`,
  };
}

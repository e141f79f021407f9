// The forge stand-in's GitLab API (`/api/v4`): merge requests, notes and members, as GitLab answers
// and refuses them. Answers are traced to gitlab.com's, recorded by Sourcegraph's tests (go-vcr
// cassettes in sourcegraph/sourcegraph-public-snapshot, named "sourcegraph" below), else to GitLab's
// own API code and its request specs (gitlabhq/gitlabhq, which run the real API), named beside each.
import type { IncomingMessage } from "node:http";
import {
  Answer,
  gitlabJson,
  type StandInPullRequest,
  type StandInState,
} from "./forge-stand-in-wire.ts";

/** What `PUT …/merge_requests/:iid` needs at least one of (GitLab's `at_least_one_of`). */
const updateFields = [
  "assignee_id",
  "description",
  "labels",
  "milestone_id",
  "remove_source_branch",
  "state_event",
  "target_branch",
  "title",
  "discussion_locked",
  "squash",
];

/** GitLab's 409 when `pull`'s source and target already have an open merge request besides `except`. */
function conflict(
  state: StandInState,
  pull: Pick<StandInPullRequest, "repository" | "head" | "base">,
  except?: StandInPullRequest,
): Answer | null {
  // gitlabhq app/models/merge_request.rb validate_branches: the same source AND target branch;
  // lib/api/merge_requests.rb answers it with conflict!, a 409 whose message is the error list
  // (spec/requests/api/merge_requests_spec.rb: ["Another open merge request already exists for
  // this source branch: !1"]).
  const open = state.pulls.find(
    (entry) =>
      entry !== except &&
      entry.repository === pull.repository &&
      entry.head === pull.head &&
      entry.base === pull.base &&
      entry.state === "open",
  );
  return open
    ? new Answer(409, {
        message: [
          `Another open merge request already exists for this source branch: !${open.number}`,
        ],
      })
    : null;
}

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
  // gitlabhq lib/api/helpers.rb unauthorized!: render_api_error!('401 Unauthorized', 401).
  if (token !== state.options.token) return new Answer(401, { message: "401 Unauthorized" });
  const [projects, id, resource, iid, ...rest] = path;
  const repository = decodeURIComponent(id ?? "");
  if (projects !== "projects" || !state.options.repositories.includes(repository)) {
    // sourcegraph internal/batches/sources/testdata/sources/GitlabSource_LoadChangeset_project-not-found.yaml
    return new Answer(404, { message: "404 Project Not Found" });
  }
  const requestMethod = request.method ?? "GET";
  // Members (gitlabhq lib/api/members.rb, `members/all/:user_id`: the member with its
  // access_level; none is find_by!'s RecordNotFound, which lib/api/api.rb answers "404 Not found").
  if (resource === "members" && iid === "all" && rest.length === 1 && requestMethod === "GET") {
    const level = state.options.members?.[Number(rest[0])];
    return level === undefined
      ? new Answer(404, { message: "404 Not found" })
      : new Answer(200, { id: Number(rest[0]), state: "active", access_level: level });
  }
  if (
    (resource === "issues" || resource === "merge_requests") &&
    iid &&
    rest[0] === "notes" &&
    rest.length <= 2
  ) {
    const body = String(gitlabJson(text).body ?? "");
    const noteableType = resource === "issues" ? "Issue" : "MergeRequest";
    if (rest.length === 1 && requestMethod === "POST") {
      // sourcegraph internal/batches/sources/testdata/sources/GitlabSource_CreateComment_success.yaml: 201.
      const note = { repository, number: Number(iid), id: 7000 + state.comments.length + 1, body };
      state.comments.push(note);
      return new Answer(201, gitlabNote(note, noteableType));
    }
    const note = state.comments.find(
      (entry) => entry.repository === repository && String(entry.id) === rest[1],
    );
    // gitlabhq lib/api/notes.rb: PUT answers 200 and the note.
    if (rest.length === 2 && requestMethod === "PUT" && note) {
      note.body = body;
      return new Answer(200, gitlabNote(note, noteableType));
    }
    return new Answer(404, { message: "404 Not found" });
  }
  if (resource !== "merge_requests" || rest.length > 0) {
    // gitlabhq lib/api/api.rb: a route it does not have is {"error":"404 Not Found"}.
    return new Answer(404, { error: "404 Not Found" });
  }
  const method = request.method ?? "GET";
  if (iid === undefined && method === "GET") {
    // gitlabhq lib/api/merge_requests.rb: `state` defaults to all, newest created first;
    // `source_branch` and `target_branch` filter.
    const source = query.get("source_branch");
    const target = query.get("target_branch");
    const wanted = query.get("state") ?? "all";
    return new Answer(
      200,
      state.pulls
        .filter(
          (pull) =>
            pull.repository === repository &&
            (wanted === "all" || (wanted === "opened") === (pull.state === "open")) &&
            (!source || pull.head === source) &&
            (!target || pull.base === target),
        )
        .reverse()
        .map((pull) => gitlabMergeRequest(state, pull)),
    );
  }
  if (iid === undefined && method === "POST") {
    const body = gitlabJson(text);
    // Grape's own words for `requires :title, :source_branch, :target_branch`, in that order.
    const missing = ["title", "source_branch", "target_branch"].filter(
      (field) => body[field] === undefined || body[field] === null,
    );
    if (missing.length > 0) {
      return new Answer(400, { error: missing.map((field) => `${field} is missing`).join(", ") });
    }
    for (const field of ["title", "source_branch", "target_branch", "description"]) {
      if (body[field] !== undefined && typeof body[field] !== "string") {
        return new Answer(400, { error: `${field} is invalid` });
      }
    }
    const head = String(body.source_branch);
    const base = String(body.target_branch);
    // gitlabhq app/models/merge_request.rb: errors.add :branch_conflict, answered 422.
    if (head === base) {
      return new Answer(422, {
        message: ["You can't use same project/branch for source and target"],
      });
    }
    const refused = conflict(state, { repository, head, base });
    if (refused) return refused;
    const pull: StandInPullRequest = {
      repository,
      number: state.nextNumber(repository),
      title: String(body.title),
      body: typeof body.description === "string" ? body.description : "",
      head,
      base,
      state: "open",
    };
    state.pulls.push(pull);
    // sourcegraph internal/batches/sources/testdata/sources/GitLabSource_CreateChangeset_no-remove-source-branch.yaml:
    // 201 and the merge request, no Location header.
    return new Answer(201, gitlabMergeRequest(state, pull));
  }
  const pull = state.pulls.find(
    (entry) => entry.repository === repository && String(entry.number) === iid,
  );
  if (!pull || (method !== "GET" && method !== "PUT")) {
    // sourcegraph internal/batches/sources/testdata/sources/GitlabSource_LoadChangeset_not-found.yaml
    return new Answer(404, { message: "404 Not found" });
  }
  if (method === "PUT") {
    // sourcegraph internal/extsvc/gitlab/testdata/vcr/TestUpdateMergeRequest_Archived.yaml (the
    // call); gitlabhq lib/api/merge_requests.rb (at least one field; 200 and the merge request; a
    // reopening that meets an open one of the same branches is the 409 above).
    const body = gitlabJson(text);
    if (!updateFields.some((field) => body[field] !== undefined)) {
      return new Answer(400, {
        error: `${updateFields.join(", ")} are missing, at least one parameter must be provided`,
      });
    }
    for (const field of ["title", "description", "target_branch"]) {
      if (body[field] !== undefined && typeof body[field] !== "string") {
        return new Answer(400, { error: `${field} is invalid` });
      }
    }
    if (body.state_event === "reopen" && pull.state !== "open") {
      const refused = conflict(state, pull, pull);
      if (refused) return refused;
    }
    if (typeof body.title === "string") pull.title = body.title;
    if (typeof body.description === "string") pull.body = body.description;
    if (typeof body.target_branch === "string") pull.base = body.target_branch;
    if (body.state_event === "close") pull.state = "closed";
    if (body.state_event === "reopen") pull.state = "open";
  }
  return new Answer(200, gitlabMergeRequest(state, pull));
}

/** A note as GitLab answers it (GitlabSource_CreateComment_success.yaml's fields, fewer). */
function gitlabNote(
  note: { id: number; number: number; body: string },
  noteableType: "Issue" | "MergeRequest",
) {
  return {
    id: note.id,
    type: null,
    body: note.body,
    author: { id: 1, username: "ada", name: "Ada", state: "active" },
    system: false,
    noteable_type: noteableType,
    noteable_iid: note.number,
  };
}

/** A merge request as GitLab answers it (the recorded fields clients read; GitLab sends many more). */
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
    author: { id: 1, username: "ada", name: "Ada", state: "active" },
    draft: false,
    merge_status: "can_be_merged",
    reference: `!${pull.number}`,
    references: { short: `!${pull.number}`, full: `${pull.repository}!${pull.number}` },
    web_url: `${state.url}/${pull.repository}/-/merge_requests/${pull.number}`,
  };
}

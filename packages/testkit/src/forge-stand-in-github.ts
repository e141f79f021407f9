// The forge stand-in's GitHub API (`/api/v3`, GitHub Enterprise Server's layout): pulls, issue
// comments and collaborator permissions, as GitHub answers and refuses them. Each answer is traced
// to a response recorded from api.github.com in a public test suite, named beside it (the
// repository, then the recording's path); "documented" marks the few traced only to GitHub's own
// documentation (github/docs content/rest/overview/resources-in-the-rest-api.md), for which no
// recording was found. hub4j/github-api's recordings are WireMock snapshots of api.github.com under
// its src/test/resources/org/kohsuke/github/; PyGithub's are under tests/ReplayData/. Answers
// recorded since 2024 also carry `"status": "<code>"`, kept here.
import type { IncomingMessage } from "node:http";
import {
  Answer,
  githubDocs,
  githubJson,
  type StandInComment,
  type StandInPullRequest,
  type StandInState,
} from "./forge-stand-in-wire.ts";

function notFound(documentation = "https://docs.github.com/rest"): Answer {
  // PyGithub/PyGithub tests/ReplayData/SpecificExceptions.testUnknownObject.txt
  return new Answer(404, { message: "Not Found", documentation_url: documentation, status: "404" });
}

function validationFailed(errors: Array<Record<string, string>>, documentation: string): Answer {
  return new Answer(422, {
    message: "Validation Failed",
    errors,
    documentation_url: documentation,
    status: "422",
  });
}

// Collaborator permission and issue comments.
function githubComments(
  state: StandInState,
  method: string,
  repository: string,
  path: string[],
  text: string,
): Answer | null {
  const [resource, first, second, third] = path;
  if (resource === "collaborators" && second === "permission" && method === "GET") {
    // hub4j/github-api GHRepositoryTest/wiremock/getPermission/__files/
    // 3-r_h_t_collaborators_kohsuke_permission.json ({"permission":"admin","user":{…}}) and
    // cannotRetrievePermissionMaintainUser/__files/3-r_h_m_collaborators_alecharp_permission.json
    // (with "role_name"). No collaborator: "none" on a private repository ("read" on a public one:
    // getPermission/__files/4-r_h_t_collaborators_dude_permission.json).
    const permission = state.options.permissions?.[first ?? ""] ?? "none";
    return new Answer(200, {
      permission,
      role_name: permission,
      user: { login: first, type: "User" },
    });
  }
  if (resource !== "issues") return null;
  if (first === "comments" && second && third === undefined && method === "PATCH") {
    // PyGithub/PyGithub tests/ReplayData/IssueComment.testEdit.txt: 200 and the comment.
    const comment = state.comments.find(
      (entry) => entry.repository === repository && String(entry.id) === second,
    );
    if (!comment) return notFound();
    comment.body = String(githubJson(text).body ?? "");
    return new Answer(200, issueComment(state, comment));
  }
  if (first && second === "comments" && third === undefined && method === "POST") {
    // hub4j/github-api GHIssueTest/wiremock/issueComment/mappings/7-r_h_g_issues_15_comments.json:
    // 201, the comment, and its API address in Location.
    const comment: StandInComment = {
      repository,
      number: Number(first),
      id: 5000 + state.comments.length + 1,
      body: String(githubJson(text).body ?? ""),
    };
    state.comments.push(comment);
    return new Answer(201, issueComment(state, comment), {
      location: `${state.url}/api/v3/repos/${repository}/issues/comments/${comment.id}`,
    });
  }
  return null;
}

function issueComment(state: StandInState, comment: StandInComment) {
  return {
    id: comment.id,
    url: `${state.url}/api/v3/repos/${comment.repository}/issues/comments/${comment.id}`,
    html_url: `${state.url}/${comment.repository}/issues/${comment.number}#issuecomment-${comment.id}`,
    body: comment.body,
  };
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
    // Documented, as a curl session: 403, text/html, these words (the 2013 recording in PyGithub's
    // tests/ReplayData/SpecificExceptions.testBadUserAgent.txt was still JSON).
    return new Answer(
      403,
      null,
      {},
      "Request forbidden by administrative rules. Please make sure your request has a User-Agent header (http://developer.github.com/v3/#user-agent-required). Check https://developer.github.com for other possible causes.",
    );
  }
  const authorization = request.headers.authorization ?? "";
  if (
    authorization !== `Bearer ${state.options.token}` &&
    authorization !== `token ${state.options.token}`
  ) {
    // hub4j/github-api AppInstallationAuthorizationProviderTest/wiremock/
    // invalidJWTTokenRaisesException/mappings/1-user.json
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
    return notFound();
  }
  const method = request.method ?? "GET";
  const exists = state.options.branchExists ?? (() => true);
  if (number === undefined && method === "GET") {
    // hub4j/github-api GHPullRequestTest/wiremock/queryPullRequestsQualifiedHead/mappings/
    // 6-r_h_g_pulls.json (`state=open&head=owner:branch&base=main`: that branch's only) and
    // 8-r_h_g_pulls.json (`state=open`: newest first).
    const head = query.get("head");
    const base = query.get("base");
    const wanted = query.get("state") ?? "open";
    return new Answer(
      200,
      state.pulls
        .filter(
          (pull) =>
            pull.repository === repository &&
            (wanted === "all" || pull.state === wanted) &&
            (!head || state.options.ignoreHeadFilter || `${owner}:${pull.head}` === head) &&
            (!base || pull.base === base),
        )
        .reverse()
        .map((pull) => githubPull(state, pull)),
    );
  }
  if (number === undefined && method === "POST") {
    const body = githubJson(text);
    // Documented: a missing field is `missing_field`, a wrong one `invalid`.
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
    // Neither of these two has a recording; both are quoted alike by many clients.
    if (errors.length === 0) {
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
    // hub4j/github-api GHIssueEventTest/wiremock/testIssueReviewRequestedEvent/mappings/
    // 4-r_h_g_pulls.json: an open pull request of the same head into the same base. (Into another
    // base, a second one opens.)
    if (
      errors.length === 0 &&
      state.pulls.some(
        (pull) =>
          pull.repository === repository &&
          pull.head === head &&
          pull.base === base &&
          pull.state === "open",
      )
    ) {
      errors.push({
        resource: "PullRequest",
        code: "custom",
        message: `A pull request already exists for ${owner}:${head}.`,
      });
    }
    if (errors.length > 0) return validationFailed(errors, `${githubDocs}#create-a-pull-request`);
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
    // hub4j/github-api GHPullRequestTest/wiremock/queryPullRequestsQualifiedHead/mappings/
    // 4-r_h_g_pulls.json and PyGithub tests/ReplayData/Repository.testCreatePull.txt: 201, the pull
    // request, its API address in Location.
    return new Answer(201, githubPull(state, pull), {
      location: `${state.url}/api/v3/repos/${repository}/pulls/${pull.number}`,
    });
  }
  const pull = state.pulls.find(
    (entry) => entry.repository === repository && String(entry.number) === number,
  );
  if (!pull || (method !== "GET" && method !== "PATCH")) {
    return notFound(`${githubDocs}#update-a-pull-request`);
  }
  if (method === "PATCH") {
    // PyGithub tests/ReplayData/PullRequest.testEditWithAllArguments.txt (200, the pull request);
    // hub4j/github-api GHPullRequestTest/wiremock/setBaseBranchNonExisting/mappings/
    // 4-r_h_g_pulls_381.json (a missing base). A closed one is edited too (queryPullRequests…Head's
    // PATCH {"state":"closed"} answers 200).
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
    if (typeof body.base === "string" && !exists(repository, body.base)) {
      errors.push({
        message: `Proposed base branch '${body.base}' was not found`,
        resource: "PullRequest",
        field: "base",
        code: "invalid",
      });
    }
    if (errors.length > 0) return validationFailed(errors, `${githubDocs}#update-a-pull-request`);
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
    merged: false,
    draft: false,
    head: { label: `${owner}:${pull.head}`, ref: pull.head },
    base: { label: `${owner}:${pull.base}`, ref: pull.base },
  };
}

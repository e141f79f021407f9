// A loopback stand-in of the two forges' REST APIs that open pull requests: GitHub's pulls
// (`/api/v3`, GitHub Enterprise Server's layout) and GitLab's merge requests (`/api/v4`). Forges
// are not reachable from the machines tests run on, so this speaks their wire format: it checks the
// token header and the JSON each API requires, refuses as they do, and answers with their shapes
// and headers. Each answer is traced, beside its code, to a response recorded from the real service
// in a public test suite: GitHub's to hub4j/github-api's WireMock snapshots and PyGithub's
// ReplayData, GitLab's to gitlab.com's recorded by Sourcegraph's tests (go-vcr cassettes), else to
// GitLab's own API code and request specs; the few without a recording say so. Gitea speaks
// GitHub's dialect with differences this does not copy (an update answered 201, "already exists" as
// 409, the `head=` filter ignored: only that last one, as `ignoreHeadFilter`): Gitea itself is tested
// against a real Gitea (decision 0044).
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { github } from "./forge-stand-in-github.ts";
import { gitlab } from "./forge-stand-in-gitlab.ts";
import {
  Answer,
  type ForgeStandInOptions,
  readBody,
  type StandInComment,
  type StandInPullRequest,
  type StandInState,
} from "./forge-stand-in-wire.ts";

export type { ForgeStandInOptions, StandInComment, StandInPullRequest };

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
      .writeHead(answer.status, {
        "content-type": answer.text === undefined ? "application/json; charset=utf-8" : "text/html",
        ...answer.headers,
      })
      .end(answer.text ?? JSON.stringify(answer.body));
  }

  async function handle(request: IncomingMessage): Promise<Answer> {
    const target = new URL(request.url ?? "/", url);
    // The raw path: GitLab's project id is one URL-encoded segment (`group%2Fapp`).
    const segments = (request.url ?? "/").split("?")[0]?.split("/").filter(Boolean) ?? [];
    const text = await readBody(request);
    if (segments[0] === "api" && segments[1] === "v3") {
      return github(state, request, segments.slice(2), target.searchParams, text);
    }
    if (segments[0] === "api" && segments[1] === "v4") {
      return gitlab(state, request, segments.slice(2), target.searchParams, text);
    }
    return new Answer(404, { message: "Not Found" });
  }

  const state: StandInState = {
    options,
    url,
    pulls,
    comments,
    nextNumber: (repository) => {
      const next = (numbers.get(repository) ?? 0) + 1;
      numbers.set(repository, next);
      return next;
    },
  };

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

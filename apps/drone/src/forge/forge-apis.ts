// The pull-request calls of each forge, in its own words: GitHub's pulls, Gitea's (and Forgejo's)
// GitHub-like pulls under /api/v1, GitLab's merge requests. Each finds the branch's open pull
// request exactly, never trusting a list filter: Gitea ignores GitHub's `head=`.
import { setTimeout as sleep } from "node:timers/promises";
import type { ForgeRepository, PullRequestRef, WorkOrderForge } from "@gadget/protocol";
import { type ForgeAnswer, forgeCaller, succeeded } from "./forge-http.ts";
import { ForgeProblem } from "./forge-problem.ts";

/** A pull request as a forge answers it: where it is, its branches, and whether it is still open. */
export interface ForgePull {
  ref: PullRequestRef;
  open: boolean;
  head: string | null;
  base: string | null;
}

/** What opening a pull request needs. */
export interface PullRequestFields {
  head: string;
  base: string;
  title: string;
  body: string;
}

/** The calls every forge answers; `refuse` turns an answer that is not a yes into the error thrown. */
export interface ForgeApi {
  get(number: number): Promise<ForgeAnswer>;
  create(fields: PullRequestFields): Promise<ForgeAnswer>;
  /** Whether a create's answer says the branch already has an open pull request. */
  alreadyExists(answer: ForgeAnswer): boolean;
  /** The branch's open pull request into `base` (else into any base); null when it has none. */
  findOpen(head: string, base: string): Promise<ForgePull | null>;
  update(number: number, body: string): Promise<ForgeAnswer>;
  read(json: unknown): ForgePull | null;
}

export interface ForgeApiOptions {
  forge: WorkOrderForge;
  repository: ForgeRepository;
  refuse: (answer: ForgeAnswer) => Error;
  timeoutMs?: number | undefined;
  /** How long Gitea may take to know a just-pushed branch; default 10 000 ms. */
  branchWaitMs?: number | undefined;
}

/** The API of the project's forge kind. */
export function forgeApi(options: ForgeApiOptions): ForgeApi {
  switch (options.forge.kind) {
    case "github":
      return githubApi(options);
    case "gitea":
      return giteaApi(options);
    case "gitlab":
      return gitlabApi(options);
  }
}

/** GitHub's and Gitea's pull request JSON. */
function readPull(json: unknown): ForgePull | null {
  const pull = json as
    | {
        number?: unknown;
        html_url?: unknown;
        state?: unknown;
        head?: { ref?: unknown };
        base?: { ref?: unknown };
      }
    | undefined;
  if (typeof pull?.number !== "number" || typeof pull.html_url !== "string") return null;
  return {
    ref: { url: pull.html_url, number: pull.number },
    open: pull.state === "open",
    head: typeof pull.head?.ref === "string" ? pull.head.ref : null,
    base: typeof pull.base?.ref === "string" ? pull.base.ref : null,
  };
}

/** The open pull request of `head` among `entries`: into `base` first, else into any base. */
function pickOpen(
  entries: unknown,
  read: (json: unknown) => ForgePull | null,
  head: string,
  base: string,
): ForgePull | null {
  const pulls = (Array.isArray(entries) ? entries : [])
    .map(read)
    .filter((pull): pull is ForgePull => pull?.open === true && pull.head === head);
  return pulls.find((pull) => pull.base === base) ?? pulls[0] ?? null;
}

function githubApi({ forge, repository, refuse, timeoutMs }: ForgeApiOptions): ForgeApi {
  const call = forgeCaller(forge, timeoutMs);
  const pulls = `${repository.apiPath}/pulls`;
  return {
    get: (number) => call("GET", `${pulls}/${number}`),
    create: ({ title, head, base, body }) => call("POST", pulls, { title, head, base, body }),
    alreadyExists: (answer) =>
      answer.status === 422 && /already exists/i.test(JSON.stringify(answer.json)),
    findOpen: async (head, base) => {
      const query = new URLSearchParams({
        head: `${repository.owner}:${head}`,
        state: "open",
        per_page: "100",
      });
      const answer = await call("GET", `${pulls}?${query}`);
      if (!succeeded(answer)) throw refuse(answer);
      // The filter narrows the list; the head ref in each answer decides.
      return pickOpen(answer.json, readPull, head, base);
    },
    update: (number, body) => call("PATCH", `${pulls}/${number}`, { body }),
    read: readPull,
  };
}

function giteaApi(options: ForgeApiOptions): ForgeApi {
  const { forge, repository, refuse, timeoutMs } = options;
  const call = forgeCaller(forge, timeoutMs);
  const pulls = `${repository.apiPath}/pulls`;
  const pageSize = 50;
  return {
    get: (number) => call("GET", `${pulls}/${number}`),
    create: async ({ title, head, base, body }) => {
      // Gitea takes a push in after answering it: until then the new branch is "not found".
      const until = Date.now() + (options.branchWaitMs ?? 10_000);
      for (;;) {
        const answer = await call("POST", pulls, { title, head, base, body });
        if (answer.status !== 404) return answer;
        const known = await call("GET", repository.apiPath);
        if (!succeeded(known)) return answer;
        if (Date.now() >= until) {
          throw new ForgeProblem(`Gitea found no branch ${head} in ${repository.name}`);
        }
        await sleep(300);
      }
    },
    alreadyExists: (answer) => answer.status === 409,
    findOpen: async (head, base) => {
      // Gitea's exact question, which may answer a closed pull request of the branch.
      const path = head.split("/").map(encodeURIComponent).join("/");
      const exact = await call("GET", `${pulls}/${encodeURIComponent(base)}/${path}`);
      if (!succeeded(exact) && exact.status !== 404) throw refuse(exact);
      const found = succeeded(exact) ? readPull(exact.json) : null;
      if (found?.open && found.head === head) return found;
      // Gitea ignores a `head=` filter: page through the open ones and match the head ref here.
      for (let page = 1; page <= 20; page += 1) {
        const query = new URLSearchParams({
          state: "open",
          limit: String(pageSize),
          page: String(page),
        });
        const answer = await call("GET", `${pulls}?${query}`);
        if (!succeeded(answer)) throw refuse(answer);
        const match = pickOpen(answer.json, readPull, head, base);
        if (match) return match;
        if (!Array.isArray(answer.json) || answer.json.length < pageSize) break;
      }
      return null;
    },
    update: (number, body) => call("PATCH", `${pulls}/${number}`, { body }),
    read: readPull,
  };
}

function gitlabApi({ forge, repository, refuse, timeoutMs }: ForgeApiOptions): ForgeApi {
  const call = forgeCaller(forge, timeoutMs);
  const requests = `${repository.apiPath}/merge_requests`;
  const read = (json: unknown): ForgePull | null => {
    const request = json as
      | {
          iid?: unknown;
          web_url?: unknown;
          state?: unknown;
          source_branch?: unknown;
          target_branch?: unknown;
        }
      | undefined;
    if (typeof request?.iid !== "number" || typeof request.web_url !== "string") return null;
    return {
      ref: { url: request.web_url, number: request.iid },
      open: request.state === "opened",
      head: typeof request.source_branch === "string" ? request.source_branch : null,
      base: typeof request.target_branch === "string" ? request.target_branch : null,
    };
  };
  return {
    get: (number) => call("GET", `${requests}/${number}`),
    create: ({ title, head, base, body }) =>
      call("POST", requests, {
        source_branch: head,
        target_branch: base,
        title,
        description: body,
      }),
    alreadyExists: (answer) => answer.status === 409,
    findOpen: async (head, base) => {
      const query = new URLSearchParams({ source_branch: head, state: "opened", per_page: "100" });
      const answer = await call("GET", `${requests}?${query}`);
      if (!succeeded(answer)) throw refuse(answer);
      return pickOpen(answer.json, read, head, base);
    },
    update: (number, body) => call("PUT", `${requests}/${number}`, { description: body }),
    read,
  };
}

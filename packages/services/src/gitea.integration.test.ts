// A private Gitea from the harness takes a branch pushed over HTTP with a token and a pull request
// opened through its API, refuses a wrong token and a reader's push, and leaves nothing behind.
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGitea, startGitea } from "./gitea.ts";
import { findRepoRoot } from "./repo-root.ts";
import { waitUntil } from "./wire.ts";

const run = promisify(execFile);
const gitEnvironment = { ...process.env, GIT_TERMINAL_PROMPT: "0" };
const git = (cwd: string, ...args: string[]) =>
  run("git", ["-c", "user.name=Ada", "-c", "user.email=ada@example.com", ...args], {
    cwd,
    env: gitEnvironment,
  });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const directories: string[] = [];
async function tempDir(): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), "gadget-gitea-test-"));
  directories.push(directory);
  return directory;
}

let gitea: RunningGitea;
beforeAll(async () => {
  gitea = await startGitea();
});
afterAll(async () => {
  await gitea?.stop();
  await Promise.all(
    directories.map((directory) => rm(directory, { recursive: true, force: true })),
  );
});

// Each push runs Gitea's git hooks, a new Gitea process each: slow on a machine running the suite.
describe("a private Gitea", { timeout: 60_000 }, () => {
  it("takes a branch pushed with a token and opens a pull request for it", async () => {
    const repository = await gitea.createRepository("app", { files: { "app.txt": "one\n" } });
    const work = path.join(await tempDir(), "app");
    await git(path.dirname(work), "clone", gitea.authenticatedUrl(repository), work);
    await git(work, "switch", "-c", "greeting");
    await writeFile(path.join(work, "app.txt"), "one\ntwo\n");
    await git(work, "commit", "-am", "Add a second line");
    await git(work, "push", "origin", "greeting");
    const pushed = (await git(work, "rev-parse", "HEAD")).stdout.trim();

    // Gitea takes the push in after answering it: a pull request opened at once may find no branch.
    await gitea.waitForBranch(repository, "greeting", { sha: pushed });
    const opened = await gitea.api<{ number: number }>(
      "POST",
      `/repos/${repository.fullName}/pulls`,
      { body: { head: "greeting", base: "main", title: "Add a greeting", body: "Two lines." } },
    );
    expect(opened.status).toBe(201);
    const listed = await gitea.api<
      Array<{
        number: number;
        title: string;
        head: { ref: string; sha: string };
        base: { ref: string };
      }>
    >("GET", `/repos/${repository.fullName}/pulls?state=open`);
    expect(
      listed.body.map((pull) => [
        pull.number,
        pull.title,
        pull.head.ref,
        pull.head.sha,
        pull.base.ref,
      ]),
    ).toEqual([[opened.body.number, "Add a greeting", "greeting", pushed, "main"]]);
  });

  it("refuses a wrong token, to the API and to git", async () => {
    expect((await gitea.api("GET", "/user", { token: "not-a-token" })).status).toBe(401);
    const me = await gitea.api<{ login: string }>("GET", "/user");
    expect(me.body.login).toBe(gitea.admin.name);

    const repository = await gitea.createRepository("guarded", { private: true });
    const wrong = new URL(repository.cloneUrl);
    wrong.username = gitea.admin.name;
    wrong.password = "not-a-token";
    const listing = await run("git", ["ls-remote", wrong.toString()], {
      env: gitEnvironment,
    }).catch((error: { stderr: string }) => error);
    expect(listing.stderr).toMatch(/Authentication failed/);
  });

  it("lets a read-only collaborator clone a private repository but not push to it", async () => {
    const repository = await gitea.createRepository("private-app", { private: true });
    const reader = await gitea.createUser("reader");
    const before = await gitea.api("GET", `/repos/${repository.fullName}`, {
      token: reader.token,
    });
    expect(before.status).toBe(404);

    await gitea.addCollaborator(repository, reader, "read");
    const seen = await gitea.api<{ permissions: object }>("GET", `/repos/${repository.fullName}`, {
      token: reader.token,
    });
    expect(seen.body.permissions).toEqual({ admin: false, push: false, pull: true });
    const work = path.join(await tempDir(), "private-app");
    await git(path.dirname(work), "clone", gitea.authenticatedUrl(repository, reader), work);
    expect(existsSync(path.join(work, "README.md"))).toBe(true);
    await git(work, "commit", "--allow-empty", "-m", "Try to write");
    const push = await git(work, "push", "origin", "main").catch(
      (error: { stderr: string }) => error,
    );
    expect(push.stderr).toMatch(/User permission denied for writing/);
  });
});

describe("starting a private Gitea", () => {
  it("says how to build it when it is not built", async () => {
    const rootDir = await tempDir();
    const recipe = JSON.parse(
      await readFile(path.join(findRepoRoot(), "tools", "gitea", "build.json"), "utf8"),
    );
    await mkdir(path.join(rootDir, "tools", "gitea"), { recursive: true });
    await writeFile(
      path.join(rootDir, "tools", "gitea", "build.json"),
      JSON.stringify({ ...recipe, version: "v0.0.1-never-built" }),
    );
    await expect(startGitea({ rootDir })).rejects.toThrow(/run `pnpm services:build`/);
  });
});

describe("stopping a private Gitea", { timeout: 60_000 }, () => {
  it("stops it and removes its data", async () => {
    const second = await startGitea();
    expect(alive(second.pid)).toBe(true);
    await second.stop();
    expect(alive(second.pid)).toBe(false);
    expect(existsSync(second.dataDir)).toBe(false);
    await expect(fetch(`${second.url}/api/v1/version`)).rejects.toThrow();
  });

  it("stops it when the process that started it is SIGKILLed", async () => {
    const script = path.join(
      path.dirname(fileURLToPath(import.meta.url)),
      "__fixtures__",
      "start-gitea-and-wait.ts",
    );
    // The fixture's Gitea data lands in a folder this test removes: its owner cannot.
    const child = spawn(process.execPath, ["--import", "tsx", script], {
      cwd: findRepoRoot(),
      env: { ...process.env, TMPDIR: await tempDir() },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const { pid, url } = await new Promise<{ pid: number; url: string }>((resolve, reject) => {
      let output = "";
      child.stdout.on("data", (chunk) => {
        output += String(chunk);
        const match = /GITEA (\d+) (\S+)/.exec(output);
        if (match) resolve({ pid: Number(match[1]), url: match[2]! });
      });
      child.on("exit", (code) => reject(new Error(`fixture exited early with ${code}`)));
    });
    expect((await fetch(`${url}/api/v1/version`)).status).toBe(200);
    child.kill("SIGKILL");
    await waitUntil(
      "the orphaned Gitea to stop",
      async () => {
        if (alive(pid)) throw new Error(`still alive: ${pid}`);
      },
      15_000,
    );
    await expect(fetch(`${url}/api/v1/version`)).rejects.toThrow();
  });
});

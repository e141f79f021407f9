// The drone's own git (outside the sandbox) never runs what a repository configured. Each kind of
// program a repository can name is planted the way a hostile checkout would carry it, each
// touching a marker file, and then the drone's git paths run: snapshots, changes, the git status
// context, fetch. No marker may appear; the effective settings are the neutral ones.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { hardenedGit } from "@gadget/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changesSince, snapshotWorkspace } from "./changes.ts";
import { workspaceContextSources } from "./context-sources.ts";
import { runGit } from "./git.ts";

let base: string;
let markers: string;
let remote: string;
let checkout: string;

const identity = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@t",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@t",
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, ...identity } });
}

/** A shell command that leaves `name` in the markers directory (and then behaves like `cat`). */
function plant(name: string): string {
  return `touch ${path.join(markers, name)}; cat`;
}

async function markersLeft(): Promise<string[]> {
  return (await readdir(markers)).sort();
}

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "gadget-git-hardening-")));
  markers = path.join(base, "markers");
  await mkdir(markers);
  remote = path.join(base, "remote.git");
  git(base, "init", "-q", "--bare", "--initial-branch=main", remote);
  const scratch = path.join(base, "scratch");
  git(base, "clone", "-q", remote, scratch);
  await writeFile(path.join(scratch, "a.txt"), "one\n");
  // Attributes that route every file through the planted filter, diff and merge drivers.
  await writeFile(path.join(scratch, ".gitattributes"), "* filter=evil diff=evil merge=evil\n");
  git(scratch, "add", "-A");
  git(scratch, "commit", "-qm", "initial");
  git(scratch, "push", "-q", "origin", "HEAD:main");

  checkout = path.join(base, "checkout");
  git(base, "clone", "-q", remote, checkout);
  // A signed-looking commit, so log.showSignature would call gpg.program.
  const tree = git(checkout, "rev-parse", "HEAD^{tree}").trim();
  const parent = git(checkout, "rev-parse", "HEAD").trim();
  const signed = [
    `tree ${tree}`,
    `parent ${parent}`,
    "author t <t@t> 1700000000 +0000",
    "committer t <t@t> 1700000000 +0000",
    "gpgsig -----BEGIN PGP SIGNATURE-----",
    " ",
    " iQEzBAABCAAdFiEE",
    " -----END PGP SIGNATURE-----",
    "",
    "signed",
    "",
  ].join("\n");
  const signedFile = path.join(base, "signed-commit");
  await writeFile(signedFile, signed);
  const commit = git(checkout, "hash-object", "-t", "commit", "-w", signedFile).trim();
  git(checkout, "update-ref", "HEAD", commit);

  // Everything a repository's config can make git run.
  const hooks = path.join(base, "hooks");
  await mkdir(hooks);
  for (const hook of [
    "post-checkout",
    "post-merge",
    "reference-transaction",
    "pre-commit",
    "post-index-change",
    "pre-auto-gc",
  ]) {
    for (const directory of [hooks, path.join(checkout, ".git", "hooks")]) {
      const file = path.join(directory, hook);
      await writeFile(file, `#!/bin/sh\ntouch ${path.join(markers, `hook-${hook}`)}\n`);
      await chmod(file, 0o755);
    }
  }
  const settings: Array<[string, string]> = [
    ["core.hooksPath", hooks],
    ["core.fsmonitor", plant("fsmonitor")],
    ["filter.evil.clean", plant("filter-clean")],
    ["filter.evil.smudge", plant("filter-smudge")],
    ["filter.evil.required", "true"],
    ["diff.evil.textconv", plant("textconv")],
    ["diff.evil.command", plant("external-diff-driver")],
    ["diff.external", plant("diff-external")],
    ["merge.evil.driver", plant("merge-driver")],
    ["core.sshCommand", plant("ssh-command")],
    ["core.gitProxy", plant("git-proxy")],
    ["core.askPass", plant("askpass")],
    ["credential.helper", `!${plant("credential-helper")}`],
    ["gpg.program", plant("gpg")],
    ["log.showSignature", "true"],
    ["remote.origin.uploadpack", `${plant("upload-pack")} >/dev/null; git-upload-pack`],
    ["protocol.ext.allow", "always"],
    ["core.pager", plant("pager")],
  ];
  for (const [key, value] of settings) git(checkout, "config", key, value);
  // An included file is the repository's config too.
  const included = path.join(base, "included.config");
  await writeFile(included, `[core]\n\tfsmonitor = ${plant("included-fsmonitor")}\n`);
  git(checkout, "config", "include.path", included);
  // Remotes over the ext:: transport and over git:// (which core.gitProxy would carry).
  git(
    checkout,
    "remote",
    "add",
    "ext-remote",
    `ext::sh -c touch% ${path.join(markers, "ext-transport")}`,
  );
  git(checkout, "remote", "add", "git-remote", "git://127.0.0.1:1/project");
  await writeFile(path.join(checkout, "a.txt"), "two\n");
});

afterAll(async () => {
  if (base) await rm(base, { recursive: true, force: true });
});

describe("the drone's git in a hostile checkout", () => {
  it("snapshots and reports changes without running hooks, fsmonitor, filters or diff drivers", async () => {
    const before = await snapshotWorkspace(checkout);
    await writeFile(path.join(checkout, "b.txt"), "new\n");
    const changes = await changesSince(checkout, before);
    expect(changes.files.map((file) => file.path)).toEqual(["b.txt"]);
    expect(changes.diff).toContain("+new");
    expect(await markersLeft()).toEqual([]);
  });

  it("reads git status and the log for the model without running fsmonitor, gpg or a pager", async () => {
    const source = workspaceContextSources().find((candidate) => candidate.name === "git_status");
    const text = await source?.load({
      workspace: checkout,
      signal: new AbortController().signal,
      goal: "",
    } as never);
    expect(text).toContain("## git status");
    expect(text).toContain("signed");
    expect(await markersLeft()).toEqual([]);
  });

  it("fetches without the repository's upload-pack, ssh or proxy commands, and refuses ext::", async () => {
    const { transport } = await hardenedGit(checkout, process.env as Record<string, string>);
    const fetched = await runGit(["fetch", ...transport, "origin"], { cwd: checkout });
    expect(fetched.code, fetched.stderr).toBe(0);
    const proxied = await runGit(["fetch", ...transport, "git-remote"], { cwd: checkout });
    expect(proxied.code).not.toBe(0);
    const ext = await runGit(["fetch", ...transport, "ext-remote"], { cwd: checkout });
    expect(ext.code).not.toBe(0);
    expect(ext.stderr).toMatch(/transport 'ext' not allowed/);
    expect(await markersLeft()).toEqual([]);
  });

  it("makes every planted setting neutral while keeping the user's own", async () => {
    const env = { ...process.env } as Record<string, string>;
    const hardened = await hardenedGit(checkout, env);
    const effective = (key: string) =>
      execFileSync(
        "git",
        [...hardened.config.flatMap((entry) => ["-c", entry]), "config", "--get-all", "-z", key],
        { cwd: checkout, encoding: "utf8", env: { ...env, ...hardened.env } },
      )
        .split("\0")
        .slice(0, -1);
    // A multi-valued key (credential.helper) restarts after an empty value; others take the last.
    const safe = (key: string) => {
      try {
        const values = effective(key);
        if (!values.includes("")) return values.at(-1) ?? "";
        return values.slice(values.lastIndexOf("") + 1).join("\n");
      } catch {
        return "";
      }
    };
    expect(safe("core.hooksPath")).toBe("/dev/null");
    expect(safe("core.fsmonitor")).toBe("false");
    expect(safe("protocol.ext.allow")).toBe("never");
    for (const key of [
      "filter.evil.clean",
      "filter.evil.smudge",
      "diff.evil.textconv",
      "diff.evil.command",
      "diff.external",
      "merge.evil.driver",
      "core.askPass",
      "core.pager",
      "credential.helper",
      "gpg.program",
    ]) {
      expect(safe(key), key).not.toContain(markers);
    }
    expect(hardened.transport).toEqual(["--upload-pack=git-upload-pack"]);
    expect(hardened.env.GIT_SSH_COMMAND).not.toContain(markers);
    expect(hardened.env.GIT_PROXY_COMMAND).toBe("");
    expect(hardened.overridden).toEqual(
      expect.arrayContaining(["core.sshcommand", "credential.helper", "filter.evil.clean"]),
    );
    expect(existsSync(path.join(markers, "credential-helper"))).toBe(false);
  });
});

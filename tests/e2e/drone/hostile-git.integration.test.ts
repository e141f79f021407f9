// The hostile-repository corpus, git: what a repository (or the model it steers) can plant for the
// drone's own git, which runs outside the sandbox — nested repositories with filters, fsmonitor,
// hooks and drivers, a `.git` file pointing elsewhere, `.gitmodules` commands, attribute drivers,
// the outer `.git`, links out, case-folded `.git` names, a planted bare repository. Each case is a
// real drone turn, then every drone-side git path (session page, hand edit, deliver, revert, the
// next turn, pruning); nothing may run outside, the drone stays online, the next turn completes.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Corpus,
  corpusProject,
  expectDroneOnline,
  expectNothingOutside,
  followEveryGitPath,
  gitPreamble,
  runHostileProgram,
  type StoredEvent,
  startCorpus,
} from "./hostile/corpus.ts";

const droneName = "hostile-git";

/** Where a case's payload would leave its mark if anything ran outside the sandbox. */
const marker = (corpus: Corpus, name: string) => JSON.stringify(path.join(corpus.outside, name));

/** A shell command (as git runs filters and drivers) that marks the host. */
const touch = (corpus: Corpus, name: string) =>
  JSON.stringify(`sh -c 'touch ${path.join(corpus.outside, name)}; cat'`);

/** Git's tree of the branch the drone pushed: a gitlink (mode 160000) would point into a nested repository. */
function pushedTree(bare: string, branch: string): string {
  return execFileSync("git", ["ls-tree", "-r", branch], { cwd: bare, encoding: "utf8" });
}

function warnings(events: StoredEvent[]): string[] {
  return events
    .filter((event) => event.type === "status" && event.data.level === "warning")
    .map((event) => event.data.message as string);
}

interface HostileCase {
  name: string;
  /** The program the model writes and runs in the worktree (after the git preamble). */
  program(corpus: Corpus): Promise<string> | string;
  /** What the case checks besides "nothing outside, every path works". */
  check?(result: { events: StoredEvent[]; output: string; tree: string }): void;
}

const cases: HostileCase[] = [
  {
    name: "a nested repository whose clean, smudge and textconv drivers mark the host",
    program: (corpus) => `
mkdirSync("vendor/v", { recursive: true });
git("vendor/v", "init", "-q");
writeFileSync("vendor/v/f.txt", "hi\\n");
git("vendor/v", "add", "f.txt");
git("vendor/v", "commit", "-qm", "nested");
writeFileSync("vendor/v/.gitattributes", "* filter=x diff=x\\n");
git("vendor/v", "config", "filter.x.clean", ${touch(corpus, "clean")});
git("vendor/v", "config", "filter.x.smudge", ${touch(corpus, "smudge")});
git("vendor/v", "config", "diff.x.textconv", ${touch(corpus, "textconv")});
// The same bytes, newer: git must look at the file again, through the filter.
writeFileSync("vendor/v/f.txt", "hi\\n");
utimesSync("vendor/v/f.txt", new Date(Date.now() + 60_000), new Date(Date.now() + 60_000));
writeFileSync("touched.txt", "touched\\n");
console.log("planted");`,
    check: ({ events, tree }) => {
      expect(warnings(events).join("\n")).toMatch(
        /Left out of the commit: vendor\/v holds a git repository of its own/,
      );
      expect(tree).not.toMatch(/^160000/m);
      expect(tree).toMatch(/\ttouched\.txt$/m);
    },
  },
  {
    name: "a nested repository with fsmonitor, a hooks path and an external diff",
    program: (corpus) => `
mkdirSync("lib/n/hooks", { recursive: true });
git("lib/n", "init", "-q");
writeFileSync("lib/n/a.txt", "a\\n");
git("lib/n", "add", "a.txt");
git("lib/n", "commit", "-qm", "nested");
git("lib/n", "config", "core.fsmonitor", ${JSON.stringify(`touch ${path.join(corpus.outside, "fsmonitor")}`)});
git("lib/n", "config", "core.hooksPath", "hooks");
git("lib/n", "config", "diff.external", ${JSON.stringify(`touch ${path.join(corpus.outside, "external-diff")}`)});
for (const hook of ["pre-commit", "post-commit", "post-checkout", "post-index-change", "reference-transaction"]) {
  writeFileSync("lib/n/hooks/" + hook, "#!/bin/sh\\ntouch " + ${marker(corpus, "hook")} + "\\n", { mode: 0o755 });
}
writeFileSync("lib/n/a.txt", "changed\\n");
writeFileSync("touched.txt", "touched\\n");
console.log("planted");`,
    check: ({ tree }) => expect(tree).not.toMatch(/^160000/m),
  },
  {
    name: "a .git file pointing at a repository elsewhere on the machine",
    program: async (corpus) => {
      // A repository of the drone's user outside any workspace, with a filter of its own.
      const elsewhere = await makeTempDir("gadget-host-repo-");
      execFileSync("git", ["init", "-q", elsewhere]);
      execFileSync("git", [
        "-C",
        elsewhere,
        "config",
        "filter.x.clean",
        `touch ${path.join(corpus.outside, "pointer")}`,
      ]);
      execFileSync("git", [
        "-C",
        elsewhere,
        "-c",
        "user.name=h",
        "-c",
        "user.email=h@h",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "host",
      ]);
      return `
mkdirSync("w", { recursive: true });
writeFileSync("w/.git", "gitdir: ${elsewhere}/.git\\n");
writeFileSync("w/.gitattributes", "* filter=x\\n");
writeFileSync("w/a.txt", "a\\n");
writeFileSync("touched.txt", "touched\\n");
console.log("planted");`;
    },
    check: ({ tree }) => {
      // Neither a gitlink to the machine's repository nor the pointer itself is committed.
      expect(tree).not.toMatch(/^160000/m);
      expect(tree).not.toMatch(/\tw\/\.git$/m);
    },
  },
  {
    name: ".gitmodules naming a command to run as the submodule's update",
    program: (corpus) => `
writeFileSync(".gitmodules", '[submodule "s"]\\n\\tpath = s\\n\\turl = ./s\\n\\tupdate = !touch ' + ${marker(corpus, "gitmodules")} + "\\n\\tignore = none\\n");
mkdirSync("s", { recursive: true });
git("s", "init", "-q");
writeFileSync("s/x.txt", "x\\n");
git("s", "add", "x.txt");
git("s", "commit", "-qm", "sub");
writeFileSync("touched.txt", "touched\\n");
console.log("planted");`,
    check: ({ tree }) => expect(tree).toMatch(/\t\.gitmodules$/m),
  },
  {
    name: ".gitattributes naming filters, diff and merge drivers the drone's git does not know",
    program: () => `
writeFileSync(".gitattributes", "* filter=lfs diff=lfs merge=lfs\\n*.txt filter=x diff=y merge=z\\n");
writeFileSync("touched.txt", "touched\\n");
console.log("planted");`,
    check: ({ tree }) => expect(tree).toMatch(/\ttouched\.txt$/m),
  },
  {
    name: "the worktree's own .git: config, hooks and the pointer file",
    program: (corpus) => `
const common = git(".", "rev-parse", "--path-format=absolute", "--git-common-dir").trim();
const own = git(".", "rev-parse", "--path-format=absolute", "--git-dir").trim();
attempt("config", () => writeFileSync(common + "/config", "[core]\\n\\tfsmonitor = touch " + ${marker(corpus, "outer-config")} + "\\n", { flag: "a" }));
attempt("worktree config", () => writeFileSync(own + "/config.worktree", "[core]\\n\\tsshCommand = touch " + ${marker(corpus, "ssh")} + "\\n"));
attempt("hook", () => writeFileSync(common + "/hooks/post-commit", "#!/bin/sh\\ntouch " + ${marker(corpus, "outer-hook")} + "\\n", { mode: 0o755 }));
attempt("pointer", () => writeFileSync(".git", "gitdir: /tmp/elsewhere\\n"));
writeFileSync("touched.txt", "touched\\n");`,
    check: ({ output }) => {
      for (const label of ["config", "worktree config", "hook", "pointer"]) {
        expect(output).toContain(`${label} FAILED`);
      }
      expect(output).not.toContain("DONE");
    },
  },
  {
    name: "symbolic links out of the worktree, and hard links to the machine's files",
    program: (corpus) => `
symlinkSync("/etc/passwd", "passwd");
symlinkSync(${JSON.stringify(path.join(corpus.home, ".ssh", "id_rsa"))}, "key");
symlinkSync("..", "up");
attempt("hard link to /etc", () => linkSync("/etc/hostname", "hostname"));
attempt("hard link to HOME", () => linkSync(process.env.HOME + "/.profile-probe", "probe"));
writeFileSync("touched.txt", "touched\\n");`,
    check: ({ output, tree }) => {
      expect(output).toContain("hard link to /etc FAILED");
      expect(output).not.toContain("DONE");
      // Committed as links (their targets' text), never as what they point to.
      expect(tree).toMatch(/^120000 blob \S+\tkey$/m);
    },
  },
  {
    name: "case-folded .git names: .GIT/config and .Git/hooks",
    program: (corpus) => `
mkdirSync(".GIT", { recursive: true });
writeFileSync(".GIT/config", "[core]\\n\\tfsmonitor = touch " + ${marker(corpus, "case-config")} + "\\n");
mkdirSync(".Git/hooks", { recursive: true });
writeFileSync(".Git/hooks/post-commit", "#!/bin/sh\\ntouch " + ${marker(corpus, "case-hook")} + "\\n", { mode: 0o755 });
writeFileSync("touched.txt", "touched\\n");
console.log("planted");`,
    check: ({ events, tree }) => {
      // The rest of the turn is committed; git's refusal of those paths is said, not fatal.
      expect(tree).toMatch(/\ttouched\.txt$/m);
      expect(warnings(events).join("\n")).toMatch(/git refuses the path/);
    },
  },
  {
    name: "a bare repository planted in the worktree",
    program: (corpus) => `
git(".", "init", "-q", "--bare", "planted.git");
git("planted.git", "config", "core.fsmonitor", ${JSON.stringify(`touch ${path.join(corpus.outside, "bare")}`)});
mkdirSync("planted.git/hooks", { recursive: true });
writeFileSync("planted.git/hooks/post-checkout", "#!/bin/sh\\ntouch " + ${marker(corpus, "bare-hook")} + "\\n", { mode: 0o755 });
writeFileSync("touched.txt", "touched\\n");
console.log("planted");`,
  },
];

describe("a hostile repository and the drone's own git", () => {
  let corpus: Corpus;

  beforeAll(async () => {
    corpus = await startCorpus(droneName);
  });

  afterAll(async () => {
    await corpus?.close();
  });

  for (const hostile of cases) {
    it(hostile.name, async () => {
      const project = await corpusProject(corpus, hostile.name.slice(0, 40));
      const program = `${gitPreamble}\n${await hostile.program(corpus)}`;
      const turn = await runHostileProgram(corpus, project.sessionId, program);
      expect(turn.events.at(-1), turn.output).toMatchObject({
        type: "done",
        data: { reason: "completed" },
      });
      const commit = turn.events.find((event) => event.type === "commit");
      expect(commit?.data.commit, "the turn's work is committed").toMatch(/^[0-9a-f]{40}$/);
      const tree = pushedTree(project.bare, commit.data.branch);
      hostile.check?.({ events: turn.events, output: turn.output, tree });

      await followEveryGitPath(corpus, project, turn.turnId);
      await expectNothingOutside(corpus);
      await expectDroneOnline(corpus, droneName);
      // Nothing of the machine's secrets reached the turn.
      const everything = JSON.stringify(turn.events);
      expect(everything).not.toContain(corpus.credential);
    }, 300_000);
  }
});

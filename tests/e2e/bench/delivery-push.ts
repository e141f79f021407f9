// Delivery: from the end of a turn to its branch pushed, against a smart-HTTP remote on loopback
// (`git http-backend` behind basic authentication, the credential in a git credential store as a
// user would keep it). The drone's step — commit the turn's one changed file, push the session
// branch with the hardened git, its config read once for both — beside `git commit && git push` typed by hand in a clone of its
// own, measured in the same run, round by round, which goes first alternating.
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startGitHttpServer } from "@gadget/testkit";
import { markdownTable, summarize, time } from "@gadget/testkit/measure";
import {
  commitSessionWork,
  prepareSessionWorktree,
  prepareWorkspace,
  pushSessionBranch,
  readHardening,
} from "gadget-drone";

const rounds = Number(process.env.BENCH_DELIVERY_ROUNDS ?? 20);
const run = promisify(execFile);

const root = await mkdtemp(path.join(tmpdir(), "gadget-delivery-bench-"));
// The drone's git reads the user's global config from HOME: a credential store, as a user sets up.
const home = path.join(root, "home");
await mkdir(home, { recursive: true });
process.env.HOME = home;
process.env.XDG_CONFIG_HOME = "";
const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@example.com",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@example.com",
  GIT_TERMINAL_PROMPT: "0",
};
// Asynchronous: the remote is served by this process, so a synchronous git call would wait forever.
const git = async (cwd: string, ...args: string[]) =>
  (await run("git", args, { cwd, env: gitEnv })).stdout;

const forge = await startGitHttpServer({
  root: path.join(root, "remotes"),
  accounts: { bench: "bench-password" },
});
try {
  await writeFile(path.join(home, ".gitconfig"), "[credential]\n\thelper = store\n");
  await writeFile(
    path.join(home, ".git-credentials"),
    `http://bench:bench-password@${new URL(forge.url).host}\n`,
    { mode: 0o600 },
  );
  // A small project on the remote.
  const bare = path.join(root, "remotes", "project.git");
  const scratch = path.join(root, "scratch");
  await mkdir(scratch, { recursive: true });
  await git(root, "init", "-q", "--bare", "--initial-branch=main", bare);
  await git(scratch, "init", "-q", "--initial-branch=main");
  for (let file = 0; file < 200; file++) {
    await writeFile(path.join(scratch, `file-${file}.ts`), `export const value = ${file};\n`);
  }
  await git(scratch, "add", "-A");
  await git(scratch, "commit", "-q", "-m", "initial");
  await git(scratch, "push", "-q", bare, "main");

  const gitUrl = `${forge.url}/project.git`;
  const workspaceRoot = path.join(root, "drone");
  const { directory: clone, defaultBranch } = await prepareWorkspace({
    workspaceRoot,
    slug: "project",
    gitUrl,
  });
  const worktree = await prepareSessionWorktree({
    workspaceRoot,
    slug: "project",
    clone,
    session: { _id: "665f1c2e9b1d4a0000000001", name: "Bench session" },
    branchPrefix: "gadget/",
    defaultBranch,
  });
  const byHand = path.join(root, "by-hand");
  await git(root, "clone", "-q", gitUrl, byHand);
  await git(byHand, "checkout", "-q", "-b", "by-hand");
  await git(byHand, "push", "-q", "origin", "by-hand");

  const drone: number[] = [];
  const baseline: number[] = [];
  for (let round = 0; round < rounds; round++) {
    await writeFile(path.join(worktree.directory, "file-0.ts"), `// round ${round}\n`);
    await writeFile(path.join(byHand, "file-0.ts"), `// round ${round}\n`);
    const droneStep = async () => {
      // As the turn does: one read of the repository's config for the commit and the push.
      const hardened = readHardening(worktree.directory);
      const commit = await commitSessionWork(worktree.directory, `Round ${round}`, { hardened });
      const outcome = await pushSessionBranch(worktree.directory, worktree.branch, {
        commit,
        hardened,
      });
      if (!outcome.pushed) throw new Error(`push failed: ${outcome.error}`);
    };
    const handStep = async () => {
      await git(byHand, "commit", "-q", "-a", "-m", `Round ${round}`);
      await git(byHand, "push", "-q", "origin", "by-hand");
    };
    if (round % 2 === 0) {
      drone.push(await time(droneStep));
      baseline.push(await time(handStep));
    } else {
      baseline.push(await time(handStep));
      drone.push(await time(droneStep));
    }
  }

  const version = (await git(root, "--version")).trim().replace("git version ", "");
  const droneSummary = summarize(drone);
  const handSummary = summarize(baseline);
  console.log(
    `\nTurn end → branch pushed, loopback smart-HTTP remote with basic auth, ${rounds} turns (git ${version})\n`,
  );
  console.log(
    markdownTable(
      ["case", "p50 (ms)", "p95 (ms)", "max (ms)"],
      [
        [
          "drone: commit the turn's changed file and push the session branch",
          droneSummary.p50.toFixed(1),
          droneSummary.p95.toFixed(1),
          droneSummary.max.toFixed(1),
        ],
        [
          "by hand: `git commit -a && git push`",
          handSummary.p50.toFixed(1),
          handSummary.p95.toFixed(1),
          handSummary.max.toFixed(1),
        ],
        [
          "ratio (drone / by hand)",
          `${(droneSummary.p50 / handSummary.p50).toFixed(2)}×`,
          `${(droneSummary.p95 / handSummary.p95).toFixed(2)}×`,
          "",
        ],
      ],
    ),
  );
} finally {
  await forge.close();
  await rm(root, { recursive: true, force: true });
}

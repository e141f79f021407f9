// Session worktrees in a 20,000-file repository: what the drone adds on top of git when a session's
// first turn makes its worktree, a later turn finds it, a turn's work is committed, and an idle
// one is pruned. Each row has its raw baseline beside it — the same git operation typed by hand
// in a clone of its own — measured in the same run, round by round, so the ratio holds on a noisy
// machine.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { markdownTable, median, time } from "@gadget/testkit/measure";
import {
  commitSessionWork,
  describeSessionWorktree,
  prepareSessionWorktree,
  prepareWorkspace,
  pruneIdleWorktrees,
} from "gadget-drone";

const fileCount = 20_000;
const rounds = Number(process.env.BENCH_WORKTREE_ROUNDS ?? 7);

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@example.com",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@example.com",
};
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", args, { cwd, env: gitEnv, stdio: ["ignore", "pipe", "pipe"] }).toString();

/** A bare repository with 20,000 files of ~1 KiB in 200 folders. */
async function createLargeRemote(root: string): Promise<string> {
  const scratch = path.join(root, "scratch");
  const bare = path.join(root, "large.git");
  await mkdir(scratch, { recursive: true });
  git(root, "init", "-q", "--bare", "--initial-branch=main", bare);
  git(scratch, "init", "-q", "--initial-branch=main");
  for (let folder = 0; folder < fileCount / 100; folder++) {
    const directory = path.join(scratch, `module-${folder}`);
    await mkdir(directory, { recursive: true });
    for (let file = 0; file < 100; file++) {
      const body = `export const value${file} = ${folder * 100 + file};\n`.repeat(30);
      await writeFile(path.join(directory, `file-${file}.ts`), body);
    }
  }
  git(scratch, "add", "-A");
  git(scratch, "commit", "-q", "-m", `${fileCount.toLocaleString()} files`);
  git(scratch, "remote", "add", "origin", bare);
  git(scratch, "push", "-q", "origin", "main");
  return bare;
}

/** A session id as the server makes them (24 hex characters), different each round. */
const sessionId = (round: number) => `665f1c2e9b1d4a00${String(round).padStart(8, "0")}`;

const fmt = (ms: number) => ms.toFixed(1);
const ratio = (drone: number[], baseline: number[]) =>
  `${(median(drone) / median(baseline)).toFixed(2)}×`;

const root = await mkdtemp(path.join(tmpdir(), "gadget-worktree-bench-"));
try {
  const bare = await createLargeRemote(root);
  const workspaceRoot = path.join(root, "drone");
  const { directory: clone, defaultBranch } = await prepareWorkspace({
    workspaceRoot,
    slug: "large",
    gitUrl: bare,
  });
  const byHand = path.join(root, "by-hand");
  git(root, "clone", "-q", bare, byHand);

  const samples = {
    created: [] as number[],
    createdBaseline: [] as number[],
    reused: [] as number[],
    reusedBaseline: [] as number[],
    committed: [] as number[],
    committedBaseline: [] as number[],
    state: [] as number[],
    stateBaseline: [] as number[],
    pruned: [] as number[],
    prunedBaseline: [] as number[],
  };
  /** Times both; which goes first alternates, so neither always meets the colder page cache. */
  async function pair(
    round: number,
    drone: () => Promise<unknown>,
    byHandWork: () => unknown,
  ): Promise<[number, number]> {
    if (round % 2 === 0) return [await time(drone), await time(byHandWork)];
    const baseline = await time(byHandWork);
    return [await time(drone), baseline];
  }
  const options = (round: number) => ({
    workspaceRoot,
    slug: "large",
    clone,
    session: { _id: sessionId(round), name: `Bench session ${round}` },
    branchPrefix: "gadget/",
    defaultBranch,
  });
  const handTree = (round: number) => path.join(root, "hand-trees", String(round));
  const directories: string[] = [];

  for (let round = 0; round < rounds; round++) {
    const [created, createdBaseline] = await pair(
      round,
      async () => directories.push((await prepareSessionWorktree(options(round))).directory),
      () =>
        git(
          byHand,
          "worktree",
          "add",
          "-q",
          "--no-track",
          "-b",
          `s-${round}`,
          handTree(round),
          "origin/main",
        ),
    );
    const [reused, reusedBaseline] = await pair(
      round,
      () => prepareSessionWorktree(options(round)),
      () => git(handTree(round), "rev-parse", "--abbrev-ref", "HEAD"),
    );
    // A turn that changed one file: the drone commits it to the session's branch.
    const directory = directories[round] as string;
    await writeFile(path.join(directory, "module-0", "file-0.ts"), `// round ${round}\n`);
    await writeFile(path.join(handTree(round), "module-0", "file-0.ts"), `// round ${round}\n`);
    const [committed, committedBaseline] = await pair(
      round,
      () => commitSessionWork(directory, `Round ${round}`),
      () => {
        git(handTree(round), "add", "--all");
        git(handTree(round), "commit", "-q", "-m", `Round ${round}`);
      },
    );
    samples.created.push(created);
    samples.createdBaseline.push(createdBaseline);
    samples.reused.push(reused);
    samples.reusedBaseline.push(reusedBaseline);
    samples.committed.push(committed);
    samples.committedBaseline.push(committedBaseline);
    // The session page asks where the branch stands: ahead/behind the default branch, dirty.
    const [state, stateBaseline] = await pair(
      round,
      () =>
        describeSessionWorktree(workspaceRoot, {
          projectSlug: "large",
          sessionId: sessionId(round),
          defaultBranch: defaultBranch ?? undefined,
        }),
      () => {
        git(handTree(round), "rev-parse", "--verify", "--quiet", `s-${round}^{commit}`);
        git(handTree(round), "rev-list", "--left-right", "--count", `s-${round}...origin/main`);
        git(handTree(round), "status", "--porcelain", "--untracked-files=normal");
      },
    );
    samples.state.push(state);
    samples.stateBaseline.push(stateBaseline);
  }

  // One idle worktree at a time: its record is aged past the retention period, the rest are fresh.
  for (let round = 0; round < rounds; round++) {
    const record = `${directories[round]}.json`;
    const aged = { ...JSON.parse(await readFile(record, "utf8")), lastUsedAt: new Date(0) };
    await writeFile(record, JSON.stringify(aged));
    const [pruned, prunedBaseline] = await pair(
      round,
      () => pruneIdleWorktrees({ workspaceRoot, retentionMs: 86_400_000 }),
      () => {
        git(byHand, "worktree", "remove", handTree(round));
        git(byHand, "worktree", "prune");
      },
    );
    samples.pruned.push(pruned);
    samples.prunedBaseline.push(prunedBaseline);
  }

  const files = fileCount.toLocaleString();
  console.log(
    `\nSession worktrees, ${files}-file repository, median of ${rounds} rounds (git ${git(root, "--version").trim().replace("git version ", "")})\n`,
  );
  console.log(
    markdownTable(
      ["case", "drone (ms)", "baseline", "baseline (ms)", "ratio"],
      [
        [
          "new session worktree (first turn of a session)",
          fmt(median(samples.created)),
          "`git worktree add -b`",
          fmt(median(samples.createdBaseline)),
          ratio(samples.created, samples.createdBaseline),
        ],
        [
          "the session's worktree again (a later turn)",
          fmt(median(samples.reused)),
          "`git rev-parse --abbrev-ref HEAD`",
          fmt(median(samples.reusedBaseline)),
          ratio(samples.reused, samples.reusedBaseline),
        ],
        [
          "commit a turn's one changed file to the session branch",
          fmt(median(samples.committed)),
          "`git add --all && git commit`",
          fmt(median(samples.committedBaseline)),
          ratio(samples.committed, samples.committedBaseline),
        ],
        [
          "the session page's branch state (ahead, behind, dirty)",
          fmt(median(samples.state)),
          "`git rev-parse`, `rev-list --count`, `status --porcelain`",
          fmt(median(samples.stateBaseline)),
          ratio(samples.state, samples.stateBaseline),
        ],
        [
          "prune an idle worktree (its record past the retention period)",
          fmt(median(samples.pruned)),
          "`git worktree remove` + `git worktree prune`",
          fmt(median(samples.prunedBaseline)),
          ratio(samples.pruned, samples.prunedBaseline),
        ],
      ],
    ),
  );
} finally {
  await rm(root, { recursive: true, force: true });
}

// Rewind and fork in a 20,000-file repository: what the drone adds on top of git when a session's
// last two turns are taken back (the old head kept under a backup ref, the branch reset) from a
// worktree as the last turn left it, and from one with an uncommitted file (kept in the backup
// too, the worktree cleaned), and when a fork's first turn makes its worktree at a turn's
// commit. Each row has its raw baseline beside it — the same git operations typed by hand in a
// clone of its own — measured in the same run, round by round, so the ratio holds on a noisy
// machine. With BENCH_REWIND_BEFORE=<commit>, the drone's rewind as it was at that commit is run
// too, round by round on a session of its own, so a change is measured against what it replaced.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { markdownTable, median, time } from "@gadget/testkit/measure";
import {
  commitSessionWork,
  prepareSessionWorktree,
  prepareWorkspace,
  rewindSession,
} from "gadget-drone";

const fileCount = 20_000;
const rounds = Number(process.env.BENCH_REWIND_ROUNDS ?? 7);
const before = process.env.BENCH_REWIND_BEFORE;

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

/** Ids as the server makes them (24 hex characters), different each round. */
const sessionId = (round: number) => `665f1c2e9b1d4a00${String(round).padStart(8, "0")}`;
const forkId = (round: number) => `665f1c2e9b1d4b00${String(round).padStart(8, "0")}`;
const beforeId = (round: number) => `665f1c2e9b1d4d00${String(round).padStart(8, "0")}`;
const cleanId = (round: number) => `665f1c2e9b1d4e00${String(round).padStart(8, "0")}`;
const turnId = (round: number, turn: number) =>
  `665f1c2e9b1d4c${String(turn).padStart(2, "0")}${String(round).padStart(8, "0")}`;

const fmt = (ms: number) => ms.toFixed(1);
const ratio = (drone: number[], baseline: number[]) =>
  `${(median(drone) / median(baseline)).toFixed(2)}×`;

/**
 * The rewind as it was at `commit`: its source put beside today's for the run (its imports are
 * the same files), taken away afterwards.
 */
async function rewindAt(commit: string) {
  const workspaceDirectory = path.resolve(
    path.dirname(fileURLToPath(import.meta.url)),
    "../../../apps/drone/src/workspace",
  );
  const source = execFileSync("git", ["show", `${commit}:apps/drone/src/workspace/rewind.ts`], {
    cwd: workspaceDirectory,
  });
  const file = path.join(workspaceDirectory, `rewind-before-${process.pid}.bench.ts`);
  await writeFile(file, source);
  try {
    return ((await import(file)) as { rewindSession: typeof rewindSession }).rewindSession;
  } finally {
    await rm(file, { force: true });
  }
}
const rewindBefore = before ? await rewindAt(before) : null;

const root = await mkdtemp(path.join(tmpdir(), "gadget-rewind-bench-"));
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
    rewound: [] as number[],
    rewoundBaseline: [] as number[],
    rewoundBefore: [] as number[],
    rewoundClean: [] as number[],
    rewoundCleanBaseline: [] as number[],
    forked: [] as number[],
    forkedBaseline: [] as number[],
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
  const options = (id: string) => ({
    workspaceRoot,
    slug: "large",
    clone,
    session: { _id: id, name: `Bench session ${id}` },
    branchPrefix: "gadget/",
    defaultBranch,
  });
  const handTree = (name: string) => path.join(root, "hand-trees", name);

  /** A session worktree with three turns committed and (unless `clean`) a file written after them. */
  async function threeTurns(id: string, round: number, clean = false): Promise<string[]> {
    const { directory } = await prepareSessionWorktree(options(id));
    const commits: string[] = [];
    for (let turn = 0; turn < 3; turn++) {
      await writeFile(path.join(directory, `module-${turn}`, "file-0.ts"), `// turn ${turn}\n`);
      const message = `Turn ${turn}\n\nGadget-Turn: ${turnId(round, turn)}`;
      commits.push((await commitSessionWork(directory, message)) as string);
    }
    if (!clean) await writeFile(path.join(directory, "scratch.txt"), "hand\n");
    return commits;
  }
  /** The same by hand, in a worktree of the by-hand clone. */
  async function threeTurnsByHand(branch: string, clean = false): Promise<string> {
    const hand = handTree(branch);
    git(byHand, "worktree", "add", "-q", "--no-track", "-b", branch, hand, "origin/main");
    for (let turn = 0; turn < 3; turn++) {
      await writeFile(path.join(hand, `module-${turn}`, "file-0.ts"), `// turn ${turn}\n`);
      git(hand, "add", "--all");
      git(hand, "commit", "-q", "-m", `Turn ${turn}\n\nGadget-Turn: ${turnId(0, turn)}`);
    }
    if (!clean) await writeFile(path.join(hand, "scratch.txt"), "hand\n");
    return hand;
  }

  for (let round = 0; round < rounds; round++) {
    // The earlier build's rewind on a session of its own, prepared and timed just before or
    // just after today's (alternating), so both meet the same machine and equally fresh files.
    const id = beforeId(round);
    const rewindTheOldWay = async () => {
      if (!rewindBefore) return;
      const request = {
        sessionId: id,
        projectSlug: "large",
        turnIds: [turnId(round, 1), turnId(round, 2)],
        deliver: false,
      };
      samples.rewoundBefore.push(await time(() => rewindBefore(workspaceRoot, request)));
    };
    if (rewindBefore && round % 2 === 1) await threeTurns(id, round);
    // Three turns, each changing one file; the last two are rewound. A file the user wrote by
    // hand after the last turn: the rewind keeps it under the backup ref.
    const commits = await threeTurns(sessionId(round), round);
    if (rewindBefore && round % 2 === 0) await threeTurns(id, round);
    const hand = await threeTurnsByHand(`s-${round}`);
    if (round % 2 === 1) await rewindTheOldWay();
    const [rewound, rewoundBaseline] = await pair(
      round,
      () =>
        rewindSession(workspaceRoot, {
          sessionId: sessionId(round),
          projectSlug: "large",
          turnIds: [turnId(round, 1), turnId(round, 2)],
          deliver: false,
        }),
      () => {
        git(hand, "update-ref", `refs/backup/${round}`, "HEAD");
        git(hand, "reset", "-q", "--hard", "HEAD~2");
        git(hand, "clean", "-q", "-fd");
      },
    );
    if (round % 2 === 0) await rewindTheOldWay();
    samples.rewound.push(rewound);
    samples.rewoundBaseline.push(rewoundBaseline);

    // The same from a worktree as the last turn left it: the backup is the old head, by hand
    // `update-ref` + `reset --hard`.
    await threeTurns(cleanId(round), round, true);
    const cleanHand = await threeTurnsByHand(`c-${round}`, true);
    const [rewoundClean, rewoundCleanBaseline] = await pair(
      round,
      () =>
        rewindSession(workspaceRoot, {
          sessionId: cleanId(round),
          projectSlug: "large",
          turnIds: [turnId(round, 1), turnId(round, 2)],
          deliver: false,
        }),
      () => {
        git(cleanHand, "update-ref", `refs/backup/c-${round}`, "HEAD");
        git(cleanHand, "reset", "-q", "--hard", "HEAD~2");
      },
    );
    samples.rewoundClean.push(rewoundClean);
    samples.rewoundCleanBaseline.push(rewoundCleanBaseline);

    // A fork from the first turn: its branch and worktree start at that turn's commit.
    const handFirst = git(hand, "rev-parse", "HEAD").trim();
    const [forked, forkedBaseline] = await pair(
      round,
      () => prepareSessionWorktree({ ...options(forkId(round)), startFrom: commits[0] as string }),
      () =>
        git(byHand, "worktree", "add", "-q", "-b", `f-${round}`, handTree(`f-${round}`), handFirst),
    );
    samples.forked.push(forked);
    samples.forkedBaseline.push(forkedBaseline);
  }

  const files = fileCount.toLocaleString();
  console.log(
    `\nRewind and fork, ${files}-file repository, median of ${rounds} rounds (git ${git(root, "--version").trim().replace("git version ", "")})\n`,
  );
  console.log(
    markdownTable(
      ["case", "drone (ms)", "baseline", "baseline (ms)", "ratio"],
      [
        [
          "rewind a session's last two turns (code), the worktree as the last turn left it",
          fmt(median(samples.rewoundClean)),
          "`git update-ref` + `git reset --hard`",
          fmt(median(samples.rewoundCleanBaseline)),
          ratio(samples.rewoundClean, samples.rewoundCleanBaseline),
        ],
        [
          "the same with an uncommitted file, kept",
          fmt(median(samples.rewound)),
          "`git update-ref` + `git reset --hard` + `git clean -fd`",
          fmt(median(samples.rewoundBaseline)),
          ratio(samples.rewound, samples.rewoundBaseline),
        ],
        ...(before
          ? [
              [
                `the same, the drone's rewind as at ${before.slice(0, 7)}`,
                fmt(median(samples.rewoundBefore)),
                "the same by hand",
                fmt(median(samples.rewoundBaseline)),
                ratio(samples.rewoundBefore, samples.rewoundBaseline),
              ],
            ]
          : []),
        [
          "a fork's first worktree, at a turn's commit",
          fmt(median(samples.forked)),
          "`git worktree add -b <branch> <dir> <commit>`",
          fmt(median(samples.forkedBaseline)),
          ratio(samples.forked, samples.forkedBaseline),
        ],
      ],
    ),
  );
} finally {
  await rm(root, { recursive: true, force: true });
}

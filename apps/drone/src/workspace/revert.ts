// Undoes one turn in its session's worktree: a revert commit of the commit the turn's trailer
// names, made with the drone's hardened git under the worktree's lock. A conflict with later turns
// leaves the worktree exactly as it was.
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import {
  SystemError,
  type TurnRevertRequest,
  type TurnRevertResult,
  UserError,
} from "@gadget/protocol";
import { changesSince, defuseGitControlFiles } from "@gadget/tools";
import { storedCredentials } from "./credentials.ts";
import { pushSessionBranch } from "./delivery.ts";
import { droneGit, firstLine } from "./git.ts";
import { tryLock } from "./lock.ts";
import { reopenSessionWorktree } from "./reopen.ts";
import {
  commitIdentity,
  readWorktreeRecord,
  touchWorktree,
  worktreeDirectory,
  worktreeLockFile,
} from "./worktree.ts";

type Repository = Awaited<ReturnType<typeof droneGit>>;

/** The trailer a turn's commit ends with (TurnRunner.commit). */
export function turnTrailer(turnId: string): string {
  return `Gadget-Turn: ${turnId}`;
}

/** The trailer a revert commit ends with, so a second revert of the turn is refused. */
export function revertTrailer(turnId: string): string {
  return `Gadget-Turn-Reverted: ${turnId}`;
}

/**
 * Reverts the turn's commit on the session's branch; restores the turn's starting snapshot when
 * its commit failed and its changes are still uncommitted; answers `unchanged` when it made none.
 * A worktree pruned for idleness is checked out again from its branch first.
 * UserErrors: `not_found` (reason `no_worktree`: another drone may hold it), `conflict` (reasons
 * `turn_running`, `clone_busy`, `already_reverted`, `uncommitted_changes`, `revert_conflict` with `files`).
 * @example const result = await revertTurn(workspaceRoot, { turnId, sessionId, projectSlug });
 */
export async function revertTurn(
  workspaceRoot: string,
  request: Omit<TurnRevertRequest, "deliver"> & { deliver?: boolean },
): Promise<TurnRevertResult> {
  const directory = worktreeDirectory(workspaceRoot, request.projectSlug, request.sessionId);
  const noWorktree = () =>
    new UserError("not_found", "This drone does not hold the session's worktree", {
      details: { reason: "no_worktree" },
    });
  const present = existsSync(path.join(directory, ".git"));
  // A pruned worktree leaves its record (and branch) behind; without either, it was never here.
  if (!present && !(await readWorktreeRecord(directory))) throw noWorktree();
  // The lock turns take: a revert never runs beside a turn of the session.
  const lock = await tryLock(
    worktreeLockFile(workspaceRoot, request.projectSlug, request.sessionId),
    `revert-${request.turnId}`,
  );
  if (!lock) {
    throw new UserError(
      "conflict",
      "A turn of this session is running; revert when it has finished",
      { details: { reason: "turn_running" } },
    );
  }
  try {
    if (
      !present &&
      !(await reopenSessionWorktree(workspaceRoot, request, `revert-${request.turnId}`))
    )
      throw noWorktree();
    const result = await revertIn(await droneGit(directory, {}, true), directory, request.turnId);
    if (result.outcome !== "reverted" || !request.deliver) return result;
    // The project delivers: the remote branch must lose the turn's changes too.
    const branch = (await readWorktreeRecord(directory))?.branch;
    if (!branch) return { ...result, pushed: false, pushError: "the session's branch is unknown" };
    const pushed = await pushSessionBranch(directory, branch, {
      commit: result.commit,
      credentialStore: storedCredentials(workspaceRoot, request.projectSlug),
    });
    return {
      ...result,
      pushed: pushed.pushed,
      ...(pushed.error ? { pushError: pushed.error } : {}),
    };
  } finally {
    await lock.release();
  }
}

async function revertIn(
  worktree: Repository,
  directory: string,
  turnId: string,
): Promise<TurnRevertResult> {
  if ((await commitsWith(worktree, revertTrailer(turnId))).length > 0) {
    throw new UserError("conflict", "This turn was already reverted", {
      details: { reason: "already_reverted" },
    });
  }
  const commit = (await commitsWith(worktree, turnTrailer(turnId)))[0];
  const uncommitted = (await readWorktreeRecord(directory))?.uncommitted;
  if (!commit && uncommitted?.turnId === turnId) {
    return restoreSnapshot(worktree, directory, uncommitted.before);
  }
  await defuseGitControlFiles(directory);
  const dirty = (await worktree.raw(["status", "--porcelain"])).trim() !== "";
  if (dirty) {
    // Either the turn's own commit failed or another's did: a revert cannot tell them apart.
    throw new UserError(
      "conflict",
      "The session's worktree has uncommitted changes (a turn's commit failed); run another turn of the session to commit them, then revert",
      { details: { reason: "uncommitted_changes" } },
    );
  }
  if (!commit) return { outcome: "unchanged" };

  const files = (await worktree.raw(["diff-tree", "--no-commit-id", "--name-only", "-r", commit]))
    .split("\n")
    .filter(Boolean);
  let failure: unknown = null;
  await worktree.raw(["revert", "--no-commit", commit]).catch((error: unknown) => {
    failure = error;
  });
  const conflicting = (await worktree.raw(["diff", "--name-only", "--diff-filter=U"]))
    .split("\n")
    .filter(Boolean);
  if (failure || conflicting.length > 0) {
    // Back to exactly the commit the worktree was at (it was clean: nothing of the user's is lost).
    await worktree
      .raw(["revert", "--abort"])
      .catch(() => worktree.raw(["reset", "--hard", "HEAD"]));
    if (conflicting.length > 0) {
      throw new UserError(
        "conflict",
        `Later turns changed the same lines: ${conflicting.join(", ")}`,
        { details: { reason: "revert_conflict", files: conflicting } },
      );
    }
    throw new SystemError("internal", `Could not revert the turn: ${firstLine(failure)}`, {
      cause: failure,
    });
  }
  const subject = (await worktree.raw(["log", "-1", "--format=%s", commit])).trim();
  await worktree.raw([
    ...commitIdentity(worktree),
    "commit",
    "--no-verify",
    "--quiet",
    "--allow-empty",
    "-m",
    `Revert "${subject}"\n\n${revertTrailer(turnId)}`,
  ]);
  return { outcome: "reverted", commit: (await worktree.revparse(["HEAD"])).trim(), files };
}

/**
 * Puts the files the last turn changed back as its starting snapshot (the tree `before`) had
 * them: its commit failed, so there is no commit to revert. Nothing is committed.
 */
async function restoreSnapshot(
  worktree: Repository,
  directory: string,
  before: string,
): Promise<TurnRevertResult> {
  const { files } = await changesSince(directory, {
    version: 1,
    tree: before,
    store: "repository",
  });
  if (files.length === 0) return { outcome: "unchanged" };
  const added = files.filter((file) => file.status === "added").map((file) => file.path);
  const kept = files.filter((file) => file.status !== "added").map((file) => file.path);
  if (kept.length > 0) {
    // `restore`, not `checkout`: simple-git appends --progress to a checkout, after the paths.
    await worktree.raw(["restore", `--source=${before}`, "--staged", "--worktree", "--", ...kept]);
  }
  if (added.length > 0) {
    // The failed commit may have staged them: out of the index too, or the next commit adds them.
    await worktree.raw(["rm", "--cached", "--quiet", "--ignore-unmatch", "--", ...added]);
    for (const file of added) await rm(path.join(directory, file), { force: true });
  }
  const record = await readWorktreeRecord(directory);
  if (record)
    await touchWorktree(directory, { sessionId: record.sessionId, branch: record.branch });
  return { outcome: "restored", files: files.map((file) => file.path) };
}

/** Commits reachable from HEAD whose message has `line` as a whole line, newest first. */
async function commitsWith(worktree: Repository, line: string): Promise<string[]> {
  const log = await worktree.raw([
    "log",
    "--fixed-strings",
    `--grep=${line}`,
    "--format=%H%x00%B%x01",
    "HEAD",
  ]);
  return log
    .split("\x01")
    .map((entry) => entry.trim().split("\0"))
    .filter(([, body]) => body?.split("\n").some((text) => text.trim() === line))
    .map(([hash]) => hash as string);
}

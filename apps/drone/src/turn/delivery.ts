// The delivery phase of a turn: its work committed to the session's branch, the branch pushed when
// the project delivers branches, and the session's pull request opened or updated.
import { agentEvent, FORGE_NAMES, pullRequestText } from "@gadget/protocol";
import type { HardenedGit } from "@gadget/sandbox";
import type { LeftOut, WorkspaceSnapshot } from "@gadget/tools";
import { storedCredentials } from "../workspace/credentials.ts";
import {
  deliverPullRequest,
  type PullRequestResult,
  pushSessionBranch,
} from "../workspace/delivery.ts";
import { readHardening } from "../workspace/git.ts";
import { commitSessionWork, type SessionWorktree, touchWorktree } from "../workspace/worktree.ts";
import { type TurnScope, turnSessionId } from "./scope.ts";

/**
 * Commits the turn's work to the session's branch, whatever way the turn ended, and delivers the
 * branch as the project says (pushes it for `branch` and `pull-request`). When the commit fails,
 * the worktree's record keeps the turn's starting snapshot, so a revert can restore it.
 */
export async function commitTurn(
  scope: TurnScope,
  worktree: SessionWorktree,
  snapshot: WorkspaceSnapshot | null,
  options: {
    /** The drone's workspace root (where the project's credential store lives). */
    workspaceRoot: string;
    /** Hears what the commit left out (nested repositories, refused paths). */
    onLeftOut: (leftOut: LeftOut[]) => void;
  },
): Promise<void> {
  const { order, logger, emit } = scope;
  let failed = false;
  const subject = order.prompt.split("\n")[0]?.trim().slice(0, 72) || "Gadget Code turn";
  let commit: string | null = null;
  // One read of the repository's config for the commit and the push.
  const hardened = readHardening(worktree.directory);
  try {
    commit = await commitSessionWork(
      worktree.directory,
      // A trailer, so `git log --grep "Gadget-Turn: <id>"` finds the commit of a turn.
      `${subject}\n\nGadget-Turn: ${order.turnId}`,
      {
        ...(order.project.commitAuthor ? { author: order.project.commitAuthor } : {}),
        onLeftOut: options.onLeftOut,
        hardened,
      },
    );
  } catch (error) {
    failed = true;
    const message = error instanceof Error ? error.message : String(error);
    logger.warn({ turnId: order.turnId, err: message }, "could not commit the turn");
    emit(
      agentEvent("status", {
        phase: "workspace",
        level: "warning",
        message: `The turn's changes stay uncommitted in the session's worktree: ${message.split("\n")[0]}`,
      }),
    );
  }
  // The turn records its branch and commit (null: nothing changed, or the commit failed).
  emit(agentEvent("commit", { branch: worktree.branch, commit }));
  await touchWorktree(worktree.directory, {
    sessionId: turnSessionId(order),
    branch: worktree.branch,
    ...(failed && snapshot?.store === "repository"
      ? { uncommitted: { turnId: order.turnId, before: snapshot.tree } }
      : {}),
  }).catch(() => {});
  if (order.project.delivery !== "workspace") {
    await deliver(scope, worktree, commit, { workspaceRoot: options.workspaceRoot, hardened });
  }
}

/**
 * Pushes the session's branch to origin with the machine's own credentials (outside the sandbox),
 * then, for delivery `pull-request`, opens or updates the session's pull request. A failure
 * leaves the turn as it ended: the delivery event says why, and `POST /api/sessions/:id/deliver`
 * tries again.
 */
async function deliver(
  scope: TurnScope,
  worktree: SessionWorktree,
  commit: string | null,
  { workspaceRoot, hardened }: { workspaceRoot: string; hardened: Promise<HardenedGit> },
): Promise<void> {
  const { order, logger, emit } = scope;
  emit(
    agentEvent("status", { phase: "delivery", message: `Pushing ${worktree.branch} to origin` }),
  );
  const outcome = await pushSessionBranch(worktree.directory, worktree.branch, {
    commit,
    credentialStore: storedCredentials(workspaceRoot, order.project.slug),
    hardened,
  });
  if (outcome.error) {
    logger.warn({ turnId: order.turnId, reason: outcome.error }, "push failed");
  }
  let pull: PullRequestResult = {};
  if (outcome.pushed && order.project.delivery === "pull-request") {
    pull = await pullRequest(scope, worktree);
    if (pull.error) {
      logger.warn({ turnId: order.turnId, reason: pull.error }, "pull request failed");
    }
  }
  const error = outcome.error ?? pull.error;
  emit(
    agentEvent("delivery", {
      branch: outcome.branch,
      commit: outcome.commit,
      pushed: outcome.pushed,
      ...(error ? { error } : {}),
      ...(pull.pullRequest
        ? { pullRequestUrl: pull.pullRequest.url, pullRequestNumber: pull.pullRequest.number }
        : {}),
    }),
  );
}

/** Opens the session's pull request, or updates the one an earlier turn opened. */
async function pullRequest(
  { order, emit }: TurnScope,
  worktree: SessionWorktree,
): Promise<PullRequestResult> {
  const existing = order.session.pullRequest;
  // In the forge's own words: GitLab's are merge requests.
  const forge = order.project.forge;
  const noun = forge?.kind === "gitlab" ? "merge request" : "pull request";
  emit(
    agentEvent("status", {
      phase: "delivery",
      message: existing
        ? `Updating the ${noun} ${existing.url}`
        : `Opening a ${noun}${forge ? ` on ${FORGE_NAMES[forge.kind]}` : ""} for ${worktree.branch}`,
    }),
  );
  // The session's turns so far (its history) and this one.
  const prompts = [
    ...order.context.filter((message) => message.role === "user").map((message) => message.content),
    order.prompt,
  ];
  return deliverPullRequest(worktree.directory, worktree.branch, {
    forge: order.project.forge,
    gitUrl: order.project.gitUrl,
    base: order.project.defaultBranch,
    ...pullRequestText(order.session.name, prompts, order.session.closesIssue),
    existing,
  });
}

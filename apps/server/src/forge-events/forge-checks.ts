// Follow-ups the forge's own reports ask for, when a project opted in (`checkFollowUps`): a
// failed check run (GitHub) or a failing commit status (Gitea) on the head of a session's pull
// request. The report's sender is the CI, so no permission is asked (Gitea lets only writers set
// a status); a commit gets one status follow-up, and a session two report follow-ups in a row at
// most, so a check its turns cannot fix stops costing.
import type { Models, ProjectDocument } from "@gadget/db";
import type { ForgeEventsSettings, ForgeHookEvent } from "@gadget/protocol";
import type { Types } from "mongoose";
import type { ForgeClient } from "./forge-client.ts";
import type { Decision } from "./forge-event-turns.ts";
import { checkPrompt, statusPrompt } from "./forge-prompts.ts";

/** Follow-ups a session gets for failed checks before a person asks again. */
const maxCheckFollowUps = 2;
const failedConclusions = ["failure", "timed_out"];
const failedStates = ["failure", "error"];
/** The events that are the forge's reports, counted together. */
const reportEvents = ["check_run", "status"];

type CheckEvent = Extract<ForgeHookEvent, { type: "check" }>;
type StatusEvent = Extract<ForgeHookEvent, { type: "status" }>;

/** A failed GitHub check run on a session's pull request. */
export async function decideCheck(
  models: Models,
  project: ProjectDocument,
  settings: ForgeEventsSettings,
  event: CheckEvent,
): Promise<Decision> {
  const { check, issue } = event;
  if (!settings.checkFollowUps) return { ignored: "check follow-ups are off" };
  if (event.action !== "completed" || !failedConclusions.includes(check.conclusion ?? "")) {
    return { ignored: `the check ${check.name} did not fail` };
  }
  const session = await sessionOf(models, project, issue.number);
  if (!session) return { ignored: `pull request #${issue.number} is not a session's` };
  const tooMany = await tooManyInARow(models, session);
  if (tooMany) return { ignored: tooMany };
  return { start: { issue, followUp: true, session, prompt: checkPrompt(event) } };
}

/**
 * A failing Gitea commit status: the open pull request whose head the commit is, asked of Gitea
 * (the status names the commit only), must be a session's.
 */
export async function decideStatus(
  models: Models,
  project: ProjectDocument,
  settings: ForgeEventsSettings,
  event: StatusEvent,
  forge: ForgeClient | null,
): Promise<Decision> {
  const { status } = event;
  if (!settings.checkFollowUps) return { ignored: "check follow-ups are off" };
  if (!failedStates.includes(event.action)) {
    return { ignored: `the status ${status.context} is ${event.action}, not failing` };
  }
  if (!forge || project.forge?.kind !== "gitea") {
    return { ignored: "commit statuses are followed up from Gitea only (GitHub: check runs)" };
  }
  // CI sets one status per job: the first failing one on a commit follows up, not each.
  const before = await models.ForgeEvent.exists({
    project: project._id,
    event: "status",
    commit: event.sha,
    outcome: "followed_up",
  });
  if (before) {
    return { ignored: `a failing status on ${event.sha.slice(0, 12)} was followed up already` };
  }
  let pull: { number: number; url: string } | null;
  try {
    pull = await forge.pullWithHead(event.sha);
  } catch (error) {
    return {
      ignored: `could not ask Gitea which pull request ${event.sha.slice(0, 12)} heads: ${(error as Error).message}`,
    };
  }
  if (!pull) return { ignored: `${event.sha.slice(0, 12)} is the head of no open pull request` };
  const session = await sessionOf(models, project, pull.number);
  if (!session) return { ignored: `pull request #${pull.number} is not a session's` };
  const tooMany = await tooManyInARow(models, session);
  if (tooMany) return { ignored: tooMany };
  const issue = { number: pull.number, title: "", body: "", url: pull.url, isPullRequest: true };
  return {
    start: { issue, followUp: true, session, prompt: statusPrompt(event, issue) },
  };
}

async function sessionOf(
  models: Models,
  project: ProjectDocument,
  number: number,
): Promise<Types.ObjectId | null> {
  const session = await models.ChatSession.findOne({
    user: project.user,
    project: project._id,
    "pullRequest.number": number,
  })
    .select({ _id: 1 })
    .lean();
  return session?._id ?? null;
}

/** Why not, when the session had its two report follow-ups since a person last asked. */
async function tooManyInARow(models: Models, session: Types.ObjectId): Promise<string | null> {
  const lastAsked = await models.ForgeEvent.findOne({
    session,
    outcome: { $in: ["started", "followed_up"] },
    event: { $nin: reportEvents },
  })
    .sort({ createdAt: -1 })
    .select({ createdAt: 1 })
    .lean();
  const reportsSince = await models.ForgeEvent.countDocuments({
    session,
    event: { $in: reportEvents },
    outcome: "followed_up",
    ...(lastAsked ? { createdAt: { $gt: lastAsked.createdAt } } : {}),
  });
  return reportsSince >= maxCheckFollowUps
    ? `${maxCheckFollowUps} check follow-ups in a row already: a person asks for the next`
    : null;
}

// A turn's hooks: the project's own (from its settings, checked by the server) followed by
// `.gadget/hooks.json` as committed at the commit the turn starts on — never the worktree's copy,
// which the agent may rewrite mid-turn. An invalid file is one warning line; its hooks do not run.
import {
  agentEvent,
  fieldIssues,
  type HookEventName,
  type HooksConfig,
  hookEventNameSchema,
  hooksConfigSchema,
} from "@gadget/protocol";
import type { TurnScope } from "../turn/scope.ts";
import { droneGit } from "../workspace/git.ts";

/** Where a repository keeps its hooks. */
export const hooksFilePath = ".gadget/hooks.json";
/** A larger hooks file is refused unread. */
const maxHooksFileBytes = 64 * 1024;

/** Reads `.gadget/hooks.json` of HEAD; null when the commit has none. */
async function committedHooksFile(
  directory: string,
  commit: string,
  signal: AbortSignal,
): Promise<{ commit: string; text: string; size: number } | null> {
  const git = await droneGit(directory, { signal }, true);
  // `<mode> blob <sha> <size>\t<path>`: whether it is there, and how large, before reading it.
  const listed = (await git.raw(["ls-tree", "-l", commit, "--", hooksFilePath])).trim();
  if (!listed) return null;
  const [, type, , size] = listed.split(/\s+/);
  if (type !== "blob") return { commit, text: "", size: -1 };
  const bytes = Number(size);
  if (bytes > maxHooksFileBytes) return { commit, text: "", size: bytes };
  return { commit, text: await git.show([`${commit}:${hooksFilePath}`]), size: bytes };
}

/** Why a hooks file cannot be used, in one line; null when it can. */
function problemOf(file: { text: string; size: number }): string | { hooks: HooksConfig } {
  if (file.size < 0) return "it is not a file";
  if (file.size > maxHooksFileBytes) return `it is larger than ${maxHooksFileBytes / 1024} KiB`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(file.text);
  } catch (error) {
    return `it is not JSON (${(error as Error).message})`;
  }
  const checked = hooksConfigSchema.safeParse(parsed);
  if (checked.success) return { hooks: checked.data };
  return fieldIssues(checked.error)
    .slice(0, 3)
    .map((issue) => `${issue.path}: ${issue.message}`)
    .join("; ");
}

/** The project's hooks, then the repository's, per event. */
function merged(first: HooksConfig, second: HooksConfig): HooksConfig {
  const result: HooksConfig = {};
  for (const event of hookEventNameSchema.options as HookEventName[]) {
    const hooks = [...(first[event] ?? []), ...(second[event] ?? [])];
    if (hooks.length > 0) result[event] = hooks;
  }
  return result;
}

/**
 * The hooks of the turn that starts now in `directory` (the session's worktree, at the commit the
 * turn starts on), and that commit. A hooks file that cannot be used is told in one warning line
 * and left out.
 */
export async function loadTurnHooks(
  { order, emit, logger }: TurnScope,
  directory: string,
  signal: AbortSignal,
): Promise<{ hooks: HooksConfig; commit: string | null }> {
  const project = order.project.hooks ?? {};
  let file: Awaited<ReturnType<typeof committedHooksFile>>;
  let commit: string | null = null;
  try {
    commit = (await (await droneGit(directory, { signal }, true)).revparse(["HEAD"])).trim();
    file = await committedHooksFile(directory, commit, signal);
  } catch (error) {
    logger.warn({ err: error }, "could not read the committed hooks file");
    file = null;
  }
  if (!file) return { hooks: project, commit };
  const checked = problemOf(file);
  if (typeof checked === "string") {
    emit(
      agentEvent("status", {
        phase: "hooks",
        level: "warning",
        message: `${hooksFilePath} at ${file.commit.slice(0, 7)} is not valid, so its hooks do not run: ${checked}`,
      }),
    );
    return { hooks: project, commit };
  }
  return { hooks: merged(project, checked.hooks), commit };
}

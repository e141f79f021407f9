// A turn's hooks made ready to run: read before the agent can change anything (turn-hooks.ts) and
// run in the turn's sandbox, the programs they name under `.gadget/` from a read-only copy of that
// directory as committed, kept among the drone's hidden workspaces until the turn ends.
import { mkdir, realpath } from "node:fs/promises";
import path from "node:path";
import { type ConfinementPolicy, confine } from "@gadget/sandbox";
import { resolveToolsOptions } from "@gadget/tools";
import { type TurnScope, turnSessionId } from "../turn/scope.ts";
import { copyCommittedHooksDirectory } from "./committed-programs.ts";
import { SandboxHooks } from "./hook-runner.ts";
import { loadTurnHooks } from "./turn-hooks.ts";

export interface TurnHooksSetup {
  workspaceRoot: string;
  sandbox: Parameters<typeof confine>[0];
  /** The turn's confinement, which the hooks share (plus their read-only copy). */
  policy: ConfinementPolicy;
  secretValues: readonly string[];
}

/**
 * The turn's hooks and the copy their programs run from (remove it when the turn ends); null when
 * the turn has none.
 * @example const ready = await setUpTurnHooks(scope, setup, worktree.directory, signal);
 */
export async function setUpTurnHooks(
  scope: TurnScope,
  setup: TurnHooksSetup,
  directory: string,
  signal: AbortSignal,
): Promise<{ hooks: SandboxHooks; copy: string } | null> {
  const { order } = scope;
  const { hooks, commit } = await loadTurnHooks(scope, directory, signal);
  if (Object.keys(hooks).length === 0) return null;
  const copy = path.join(setup.workspaceRoot, ".hooks", order.turnId);
  const committedCopy = commit
    ? await copyCommittedHooksDirectory(directory, commit, copy, signal)
    : null;
  await mkdir(copy, { recursive: true });
  const { policy } = setup;
  const runner = new SandboxHooks({
    hooks,
    committedCopy,
    // The copy lives among the drone's hidden workspaces: shown read-only to the hooks alone.
    confinement: confine(setup.sandbox, {
      ...policy,
      readOnly: [...(policy.readOnly ?? []), copy],
    }),
    directory: await realpath(directory),
    turn: { id: order.turnId, session: turnSessionId(order), project: order.project._id },
    secretValues: [...setup.secretValues],
    projectEnv: order.project.env,
    // The environment run_command takes PATH, HOME, LANG… from.
    hostEnv: resolveToolsOptions({}).env,
  });
  return { hooks: runner, copy };
}

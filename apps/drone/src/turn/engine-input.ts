// The work order mapped to the engine's input, and the tools made for the turn's worktree. Pure:
// what the engine is asked to do is tested without git, a sandbox or a server (engine-input.test.ts).
import type { TurnInput } from "@gadget/agent";
import type { IWorkOrder } from "@gadget/protocol";
import type { CommandConfinement } from "@gadget/sandbox";
import {
  createLoadSkillTool,
  createTools,
  type SkillSummary,
  workspaceContextSources,
} from "@gadget/tools";

type Tools = NonNullable<TurnInput["tools"]>;

/** Where the turn works and with what: the worktree's directory and the tools made for it. */
export interface TurnWorkspace {
  directory: string;
  tools: Tools;
  /** The prompt as a `/command` expanded it; default the order's prompt. */
  goal?: string;
  /** The worktree's skills, listed to the model. */
  skills?: TurnInput["skills"];
}

/**
 * The engine's input for a work order: its prompt and history, its provider (optional fields left
 * out when unset), the session's mode and approval, and a resumed turn's state (parsed when the
 * server stored it as JSON text).
 * @example const input = engineInput(order, { directory: worktree.directory, tools });
 */
export function engineInput(
  order: IWorkOrder,
  { directory, tools, goal, skills }: TurnWorkspace,
): TurnInput {
  const provider = order.provider;
  return {
    goal: goal ?? order.prompt,
    ...(order.images.length > 0 ? { images: order.images } : {}),
    history: order.context,
    provider: {
      ...(provider.name ? { name: provider.name } : {}),
      baseUrl: provider.baseUrl,
      apiKey: provider.apiKey,
      modelId: provider.modelId,
      params: provider.params,
      ...(provider.escalationModelId ? { escalationModelId: provider.escalationModelId } : {}),
      ...(provider.contextWindow ? { contextWindow: provider.contextWindow } : {}),
      ...(provider.pricing ? { pricing: provider.pricing } : {}),
      quirks: provider.quirks,
      acceptsImages: provider.images,
    },
    mode: order.session.mode,
    approval: order.session.approval,
    allowedCommands: order.session.allowedCommands,
    limits: order.limits,
    tools,
    ...(skills?.length ? { skills } : {}),
    contextSources: workspaceContextSources(),
    workspace: directory,
    ...(order.quotaWait ? { quotaWait: order.quotaWait } : {}),
    ...(order.resume
      ? {
          resume: {
            ...order.resume,
            state:
              typeof order.resume.state === "string"
                ? JSON.parse(order.resume.state)
                : order.resume.state,
          },
        }
      : {}),
  };
}

/**
 * The engine's tools in the turn's worktree: the workspace's (confined, with the turn's secrets
 * kept out), `load_skill` when the worktree has skills, and the session's MCP servers' tools.
 */
export function turnTools(
  order: IWorkOrder,
  options: {
    confinement: CommandConfinement;
    secretValues: string[];
    skills: SkillSummary[];
    mcpTools?: Tools | undefined;
  },
): Tools {
  return [
    ...createTools({
      secretValues: options.secretValues,
      sandbox: options.confinement,
      projectEnv: order.project.env,
    }),
    ...(options.skills.length ? [createLoadSkillTool(options.skills)] : []),
    ...(options.mcpTools ?? []),
  ];
}

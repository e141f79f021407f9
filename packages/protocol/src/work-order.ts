// IWorkOrder: what the server sends a drone to start (or resume) one turn.
import { z } from "zod";
import { chatMessageSchema, turnMessageSchema } from "./chat.ts";
import {
  approvalPolicySchema,
  modelParamsSchema,
  networkPolicySchema,
  objectIdSchema,
  pricingSchema,
  providerQuirkCodeSchema,
  turnLimitsSchema,
  turnModeSchema,
} from "./common.ts";
import {
  commitAuthorSchema,
  deliveryModeSchema,
  pullRequestRefSchema,
  workOrderForgeSchema,
} from "./delivery.ts";
import { workOrderMcpServerSchema } from "./mcp.ts";
import { hooksConfigSchema } from "./project-hooks.ts";
import { branchPrefixSchema, DEFAULT_BRANCH_PREFIX } from "./session-branch.ts";

/**
 * The work order (docs/reference.md): the turn, project, session, provider, history, prompt and
 * limits; the optional fields add what the drone needs for some turns: the approval policy, the escalation model,
 * pricing, verification commands, and where to continue a resumed turn.
 */
export const workOrderSchema = z.object({
  turnId: objectIdSchema,
  project: z.object({
    _id: objectIdSchema,
    name: z.string().min(1),
    slug: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "must be lowercase letters, digits and dashes"),
    gitUrl: z.string().min(1),
    defaultBranch: z.string().min(1).optional(),
    verifyCommands: z.array(z.string().min(1)).optional(),
    /** What the sandbox lets the project's commands reach; none unless the project says. */
    network: networkPolicySchema.default({ mode: "none", allowedHosts: [] }),
    /** Start of the session branch's name (see sessionBranch). */
    branchPrefix: branchPrefixSchema.default(DEFAULT_BRANCH_PREFIX),
    /** Whether the drone pushes the session's branch after the turn's commit. */
    delivery: deliveryModeSchema.default("workspace"),
    /** The turn commit's author; absent: the drone machine's git identity. */
    commitAuthor: commitAuthorSchema.optional(),
    /**
     * Where delivery `pull-request` opens the session's pull request, with the project's token
     * (decrypted for this order; the drone's own process uses it, never a command or the agent).
     */
    forge: workOrderForgeSchema.optional(),
    /** The project's MCP servers, their env values and bearer tokens opened for this turn. */
    mcpServers: z.array(workOrderMcpServerSchema).default([]),
    /**
     * The project's own environment variables (opened for this turn): every command the turn runs
     * gets them; nothing of the drone's own environment passes but PATH, HOME, LANG, LC_*, TERM,
     * TZ and TMPDIR.
     */
    env: z.record(z.string(), z.string()).default({}),
    /** The project's own hooks; the drone adds `.gadget/hooks.json` of the turn's start commit. */
    hooks: hooksConfigSchema.default({}),
  }),
  session: z.object({
    _id: objectIdSchema.optional(),
    name: z.string(),
    mode: turnModeSchema,
    approval: approvalPolicySchema.default("auto"),
    /** Commands `run_command` runs without asking under `on-write`: exact strings the user allowed. */
    allowedCommands: z.array(z.string().min(1)).default([]),
    /** The session's pull request, once a turn opened it: later turns update it. */
    pullRequest: pullRequestRefSchema.optional(),
    /** A forked session's branch starts at this commit (its source's turn) instead of the default. */
    startFrom: z
      .string()
      .regex(/^[0-9a-f]{7,64}$/, "must be a commit hash")
      .optional(),
    /** The forge issue the session works on: its pull request's body says it closes it. */
    closesIssue: z.number().int().positive().optional(),
  }),
  provider: z.object({
    /** The provider's name, for messages (a provider that cannot be reached is named). */
    name: z.string().optional(),
    baseUrl: z.url(),
    apiKey: z.string(),
    modelId: z.string().min(1),
    params: modelParamsSchema,
    escalationModelId: z.string().min(1).optional(),
    contextWindow: z.number().int().positive().optional(),
    pricing: pricingSchema.optional(),
    /** What the provider is known to refuse or demand: the drone adapts its requests at once. */
    quirks: z.array(providerQuirkCodeSchema).default([]),
  }),
  context: z.array(chatMessageSchema),
  prompt: z.string().min(1),
  limits: turnLimitsSchema.default({}),
  /** The seq the drone gives its first event of this dispatch (the server wrote the ones before). */
  nextSeq: z.number().int().positive().default(1),
  /** Users' messages sent to the turn before it reached this drone, oldest first (steering). */
  steering: z
    .array(z.object({ messageId: z.string().min(1), text: z.string(), interrupt: z.boolean() }))
    .optional(),
  /**
   * The provider's rate-limit wait the turn was in when it stopped (its drone restarted, or it was
   * resumed): the engine calls the provider no sooner than `until`, counting the wait from `since`.
   */
  quotaWait: z.object({ since: z.string().datetime(), until: z.string().datetime() }).optional(),
  /** Present when the turn continues where it stopped: the turn's own messages so far. */
  resume: z
    .object({
      messages: z.array(turnMessageSchema),
      /** The engine's saved TurnState, opaque to the server. */
      state: z.unknown().optional(),
    })
    .optional(),
});
export type IWorkOrder = z.infer<typeof workOrderSchema>;
/** A work order as written by its sender, before defaults are applied. */
export type IWorkOrderInput = z.input<typeof workOrderSchema>;

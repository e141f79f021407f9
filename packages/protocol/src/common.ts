// Small schemas shared by the rest of the protocol.
import { z } from "zod";

/** A MongoDB ObjectId as it travels over the wire: 24 hex characters. */
export const objectIdSchema = z.string().regex(/^[0-9a-f]{24}$/i, "must be a 24-character hex id");

/** Dates arrive as ISO strings over JSON and as Date objects in process; both are accepted. */
export const dateSchema = z.coerce.date();

export const turnModeSchema = z.enum(["agent", "ask", "tester", "docser"]);
export type TurnMode = z.infer<typeof turnModeSchema>;

export const approvalPolicySchema = z.enum(["auto", "on-write"]);
export type ApprovalPolicy = z.infer<typeof approvalPolicySchema>;

/** Optional bounds on one turn. Absent fields mean "no limit" (a turn runs until the model is done). */
export const turnLimitsSchema = z.object({
  maxPasses: z.number().int().positive().optional(),
  maxToolCalls: z.number().int().positive().optional(),
  tokenBudget: z.number().int().positive().optional(),
  costBudget: z.number().positive().optional(),
  /**
   * When one of these limits is reached: `synthesize` (the default) ends the turn with an answer
   * from what was gathered; `ask` pauses it with a `budget` approval the user can extend it by.
   */
  onReach: z.enum(["ask", "synthesize"]).optional(),
  /** How long an `ask` waits for the user before the turn synthesizes; default 600000 ms. */
  askTimeoutMs: z.number().int().positive().max(86_400_000).optional(),
});
export type TurnLimits = z.infer<typeof turnLimitsSchema>;

/** Sampling parameters passed through to the provider; unset ones are not sent. */
export const modelParamsSchema = z.object({
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().min(0).max(1).optional(),
  topK: z.number().int().positive().optional(),
  /** The longest answer to ask for; sent as `max_tokens` (or `max_completion_tokens`, a quirk). */
  maxTokens: z.number().int().positive().optional(),
});
export type ModelParams = z.infer<typeof modelParamsSchema>;

/** Prices in the provider's currency (normally USD) per million tokens. */
export const pricingSchema = z.object({
  inputPerMTok: z.number().nonnegative(),
  outputPerMTok: z.number().nonnegative(),
  cachedInputPerMTok: z.number().nonnegative().optional(),
});
export type Pricing = z.infer<typeof pricingSchema>;

/** How far a project's commands reach the network from the sandbox (`none` unless the project says). */
export const networkModeSchema = z.enum(["none", "allowlist", "open"]);
export type NetworkMode = z.infer<typeof networkModeSchema>;

const hostLabel = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const allowedHostPattern = new RegExp(
  `^(?:(?:\\*\\.)?(?:${hostLabel}\\.)*${hostLabel}|\\d{1,3}(?:\\.\\d{1,3}){3}|\\[[0-9a-f:.]+\\])(?::\\d{1,5})?$`,
);

/**
 * One entry of a project's `allowedHosts`: `registry.npmjs.org`, `*.github.com` (subdomains
 * only), an IPv4 or `[IPv6]` literal, or `localhost`, each optionally with `:port`. A host name
 * never reaches a loopback or private address; only an address literal or `localhost` does.
 */
export const allowedHostSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(260)
  .regex(
    allowedHostPattern,
    'must be a host name ("registry.npmjs.org"), "*." and a domain, or an IP address, optionally with ":port"',
  )
  .refine((entry) => {
    const port = /:(\d+)$/.exec(entry)?.[1];
    return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
  }, "port must be 1–65535");

/** A project's network policy as the drone enforces it. An empty allowlist allows nothing. */
export const networkPolicySchema = z.object({
  mode: networkModeSchema.default("none"),
  allowedHosts: z.array(allowedHostSchema).max(100).default([]),
});
export type NetworkPolicy = z.infer<typeof networkPolicySchema>;

/** What confines a drone's commands, as the drone reports it (`GET /api/drones` shows it). */
export const sandboxInfoSchema = z.object({
  /** `none` when the drone was started with --no-sandbox. */
  kind: z.enum(["bubblewrap", "seatbelt", "none"]),
  version: z.string().max(100).nullable(),
  /** `isolated`: the project's network policy is enforced; `host`: commands share the drone's network. */
  network: z.enum(["isolated", "host"]),
});
export type SandboxInfo = z.infer<typeof sandboxInfoSchema>;

/**
 * What a provider refuses or demands, learned by the drone from a documented rejection and then
 * remembered on the provider so later turns send the adapted request at once:
 * - `no_temperature` / `no_top_p`: the sampling field is refused (reasoning models): not sent;
 * - `max_completion_tokens`: `max_tokens` is refused: the limit goes as `max_completion_tokens`;
 * - `no_stream_options`: `stream_options` is refused: not sent, usage is estimated;
 * - `echo_reasoning` / `no_reasoning_echo`: reasoning must (or must not) be sent back as
 *   `reasoning_content` on the assistant messages of the conversation;
 * - `short_tool_call_ids`: tool-call ids must be 9 letters or digits (Mistral): ids from history are
 *   rewritten consistently for this provider.
 */
export const providerQuirkCodeSchema = z.enum([
  "no_temperature",
  "no_top_p",
  "max_completion_tokens",
  "no_stream_options",
  "echo_reasoning",
  "no_reasoning_echo",
  "short_tool_call_ids",
]);
export type ProviderQuirkCode = z.infer<typeof providerQuirkCodeSchema>;

/** A quirk as remembered on a provider: what the provider said when it was learned. */
export const providerQuirkSchema = z.object({
  code: providerQuirkCodeSchema,
  /** The provider's own words (clipped), so a user can see why the request changed. */
  message: z.string().max(500),
  learnedAt: z.string(),
});
export type ProviderQuirk = z.infer<typeof providerQuirkSchema>;

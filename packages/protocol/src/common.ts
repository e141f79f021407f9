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

/** Optional bounds on one turn. Absent fields mean "no limit" (seed 001: no imposed limits). */
export const turnLimitsSchema = z.object({
  maxPasses: z.number().int().positive().optional(),
  maxToolCalls: z.number().int().positive().optional(),
  tokenBudget: z.number().int().positive().optional(),
  costBudget: z.number().positive().optional(),
});
export type TurnLimits = z.infer<typeof turnLimitsSchema>;

/** Sampling parameters passed through to the provider; unset ones are not sent. */
export const modelParamsSchema = z.object({
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().min(0).max(1).optional(),
  topK: z.number().int().positive().optional(),
});
export type ModelParams = z.infer<typeof modelParamsSchema>;

/** Prices in the provider's currency (normally USD) per million tokens. */
export const pricingSchema = z.object({
  inputPerMTok: z.number().nonnegative(),
  outputPerMTok: z.number().nonnegative(),
  cachedInputPerMTok: z.number().nonnegative().optional(),
});
export type Pricing = z.infer<typeof pricingSchema>;

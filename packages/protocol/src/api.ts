// REST request and response bodies of SPEC.md.
import { z } from "zod";
import {
  approvalPolicySchema,
  dateSchema,
  modelParamsSchema,
  pricingSchema,
  turnLimitsSchema,
  turnModeSchema,
} from "./common.ts";

const email = z
  .email()
  .max(254)
  .transform((value) => value.toLowerCase());
const password = z.string().min(8, "must be at least 8 characters").max(200);

export const signupBodySchema = z.object({
  email,
  password,
  name: z.string().trim().min(1).max(100).optional(),
});
export type SignupBody = z.infer<typeof signupBodySchema>;

export const loginBodySchema = z.object({ email, password: z.string().min(1).max(200) });
export type LoginBody = z.infer<typeof loginBodySchema>;

export const userSchema = z.object({
  _id: z.string(),
  email: z.string(),
  name: z.string(),
  createdAt: dateSchema,
});
export type User = z.infer<typeof userSchema>;

export const authResponseSchema = z.object({ user: userSchema, token: z.string() });
export type AuthResponse = z.infer<typeof authResponseSchema>;

export const registrationTokenResponseSchema = z.object({
  token: z.string(),
  expiresAt: dateSchema,
  command: z.string(),
});
export type RegistrationTokenResponse = z.infer<typeof registrationTokenResponseSchema>;

export const registerDroneBodySchema = z.object({
  token: z.string().min(1),
  name: z.string().trim().min(1).max(100),
  hostname: z.string().max(255).optional(),
  platform: z.string().max(100).optional(),
  version: z.string().max(50).optional(),
  capacity: z.number().int().min(1).max(64).optional(),
});
export type RegisterDroneBody = z.infer<typeof registerDroneBodySchema>;

export const droneStatusSchema = z.enum(["online", "offline"]);

export const droneSchema = z.object({
  _id: z.string(),
  name: z.string(),
  status: droneStatusSchema,
  activeTurns: z.number().int().nonnegative(),
  capacity: z.number().int().positive(),
  lastSeenAt: dateSchema.nullable(),
  hostname: z.string().nullable(),
  platform: z.string().nullable(),
  version: z.string().nullable(),
});
export type Drone = z.infer<typeof droneSchema>;

export const registerDroneResponseSchema = z.object({ drone: droneSchema, credential: z.string() });
export type RegisterDroneResponse = z.infer<typeof registerDroneResponseSchema>;

export const createProviderBodySchema = z.object({
  name: z.string().trim().min(1).max(100),
  baseUrl: z.url({ protocol: /^https?$/ }),
  apiKey: z.string().max(4096),
  modelId: z.string().trim().min(1).max(200),
  params: modelParamsSchema.optional(),
  escalationModelId: z.string().trim().min(1).max(200).optional(),
  contextWindow: z.number().int().min(1024).optional(),
  pricing: pricingSchema.optional(),
});
export type CreateProviderBody = z.infer<typeof createProviderBodySchema>;

/** `POST /api/providers/check`: try a provider before saving it. */
export const providerCheckBodySchema = z.object({
  baseUrl: createProviderBodySchema.shape.baseUrl,
  apiKey: createProviderBodySchema.shape.apiKey,
  modelId: createProviderBodySchema.shape.modelId.optional(),
});
export type ProviderCheckBody = z.infer<typeof providerCheckBodySchema>;

/** The answer of both provider checks: `ok` when `/models` answered (and lists `modelId`, if given). */
export const providerCheckResultSchema = z.object({
  ok: z.boolean(),
  models: z.array(z.string()).optional(),
  message: z.string().optional(),
});
export type ProviderCheckResult = z.infer<typeof providerCheckResultSchema>;

/** A provider as returned: never with its apiKey. */
export const providerSchema = createProviderBodySchema.omit({ apiKey: true }).extend({
  _id: z.string(),
  hasApiKey: z.boolean(),
  createdAt: dateSchema,
});
export type Provider = z.infer<typeof providerSchema>;

export const createProjectBodySchema = z.object({
  name: z.string().trim().min(1).max(100),
  gitUrl: z.string().trim().min(1).max(2048),
  defaultBranch: z.string().trim().min(1).max(255).optional(),
  verifyCommands: z.array(z.string().trim().min(1).max(1000)).max(20).optional(),
});
export type CreateProjectBody = z.infer<typeof createProjectBodySchema>;

export const projectSchema = z.object({
  _id: z.string(),
  name: z.string(),
  slug: z.string(),
  gitUrl: z.string(),
  defaultBranch: z.string().nullable(),
  verifyCommands: z.array(z.string()),
  createdAt: dateSchema,
});
export type Project = z.infer<typeof projectSchema>;

export const createSessionBodySchema = z.object({
  name: z.string().trim().min(1).max(200),
  mode: turnModeSchema.optional(),
  approval: approvalPolicySchema.optional(),
});
export type CreateSessionBody = z.infer<typeof createSessionBodySchema>;

export const chatSessionSchema = z.object({
  _id: z.string(),
  project: z.string(),
  name: z.string(),
  mode: turnModeSchema,
  approval: approvalPolicySchema,
  createdAt: dateSchema,
});
export type ChatSession = z.infer<typeof chatSessionSchema>;

export const createTurnBodySchema = z.object({
  prompt: z.string().trim().min(1).max(100_000),
  providerId: z.string().min(1),
  droneId: z.string().min(1).optional(),
  limits: turnLimitsSchema.optional(),
});
export type CreateTurnBody = z.infer<typeof createTurnBodySchema>;

export const approvalDecisionBodySchema = z.object({
  approve: z.boolean(),
  input: z.unknown().optional(),
});
export type ApprovalDecisionBody = z.infer<typeof approvalDecisionBodySchema>;

export const eventsQuerySchema = z.object({
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(200),
});

export const filePathQuerySchema = z.object({ path: z.string().max(4096).default("") });

export const writeFileBodySchema = z.object({
  path: z.string().min(1).max(4096),
  content: z.string().max(10 * 1024 * 1024),
  baseSha: z.string().optional(),
});
export type WriteFileBody = z.infer<typeof writeFileBodySchema>;

export const fileEntrySchema = z.object({
  name: z.string(),
  path: z.string(),
  type: z.enum(["file", "directory", "symlink"]),
  size: z.number().int().nonnegative().optional(),
});
export type FileEntry = z.infer<typeof fileEntrySchema>;

export const fileContentSchema = z.object({
  path: z.string(),
  content: z.string(),
  sha: z.string(),
});
export type FileContent = z.infer<typeof fileContentSchema>;

// REST bodies of providers (docs/reference.md, "Providers"): what a user saves (the key only ever
// sent, never answered), the check that tries one before saving, and a provider as answered.
import { z } from "zod";
import {
  dateSchema,
  modelParamsSchema,
  pricingSchema,
  providerQuirkCodeSchema,
  providerQuirkSchema,
} from "./common.ts";

/**
 * A provider's base URL: http(s), no user name or password (the key goes in apiKey), and no
 * query or fragment (they would make the `/models` and `/chat/completions` appended to it moot).
 */
export const baseUrlSchema = z
  .url({ protocol: /^https?$/ })
  .max(2048)
  .refine((value) => {
    const url = new URL(value);
    return !url.username && !url.password && !value.includes("?") && !value.includes("#");
  }, "a base URL has no user name, password, query (?) or fragment (#)");

export const createProviderBodySchema = z.object({
  name: z.string().trim().min(1).max(100),
  baseUrl: baseUrlSchema,
  apiKey: z.string().max(4096),
  modelId: z.string().trim().min(1).max(200),
  params: modelParamsSchema.optional(),
  escalationModelId: z.string().trim().min(1).max(200).optional(),
  contextWindow: z.number().int().min(1024).optional(),
  pricing: pricingSchema.optional(),
});
export type CreateProviderBody = z.infer<typeof createProviderBodySchema>;

/**
 * `PATCH /api/providers/:id`: any provider field. A new `apiKey` replaces the stored one (an empty
 * string removes it); `null` clears an optional field.
 */
export const updateProviderBodySchema = createProviderBodySchema
  .extend({
    escalationModelId: createProviderBodySchema.shape.escalationModelId.unwrap().nullable(),
    contextWindow: createProviderBodySchema.shape.contextWindow.unwrap().nullable(),
    pricing: pricingSchema.nullable(),
  })
  .partial()
  .strict();
export type UpdateProviderBody = z.infer<typeof updateProviderBodySchema>;

/** `POST /api/providers/check`: try a provider before saving it. */
export const providerCheckBodySchema = z.object({
  baseUrl: createProviderBodySchema.shape.baseUrl,
  apiKey: createProviderBodySchema.shape.apiKey,
  modelId: createProviderBodySchema.shape.modelId.optional(),
});
export type ProviderCheckBody = z.infer<typeof providerCheckBodySchema>;

/**
 * What the server asks a drone to check (socket `provider_check`): a saved provider's check adds
 * `probe`, the params and quirks its turns send, for one small streamed call offering one tool.
 */
export const providerCheckRequestSchema = providerCheckBodySchema.extend({
  probe: z
    .object({
      params: modelParamsSchema.optional(),
      quirks: z.array(providerQuirkCodeSchema).default([]),
    })
    .optional(),
});
export type ProviderCheckRequest = z.infer<typeof providerCheckRequestSchema>;

/** The answer of both provider checks: `ok` when `/models` answered (and lists `modelId`, if given). */
export const providerCheckResultSchema = z.object({
  ok: z.boolean(),
  models: z.array(z.string()).optional(),
  message: z.string().optional(),
  /** Where the check ran: one of the user's drones (where turns call it), or the server. */
  via: z.enum(["drone", "server"]).optional(),
  /**
   * A saved provider's check (`POST /api/providers/:id/check`) also makes one small streamed call
   * offering one tool, and says what the provider did with it.
   */
  probe: z
    .object({
      /** The answer came as a stream of chunks. */
      streaming: z.boolean(),
      /** The model called the offered tool, with arguments that parse. */
      toolCalling: z.boolean(),
      /** Reasoning came back (`reasoning_content`, `reasoning`, typed parts or think tags). */
      reasoning: z.boolean(),
      /** The provider reported token usage (else the drone estimates it). */
      usage: z.boolean(),
      /** What went wrong, when the probe call failed. */
      message: z.string().optional(),
      /**
       * The model took a tiny image as an image part (a second small call); absent when that
       * call was not made (the first failed, or the checker is older).
       */
      images: z.boolean().optional(),
      /** Why the model is taken not to accept images (the provider's words, clipped). */
      imagesMessage: z.string().optional(),
    })
    .optional(),
  /** Quirks learned during the probe (also remembered on the provider). */
  quirks: z.array(providerQuirkCodeSchema).optional(),
});
export type ProviderCheckResult = z.infer<typeof providerCheckResultSchema>;

/** What a saved provider's check learned of its model and images (decision 0051). */
export const providerImagesSchema = z.object({
  /** The model checked: a later change of model makes this unknown again. */
  modelId: z.string(),
  accepted: z.boolean(),
  checkedAt: dateSchema,
  message: z.string().optional(),
});
export type ProviderImages = z.infer<typeof providerImagesSchema>;

/** A provider as returned: never with its apiKey. */
export const providerSchema = createProviderBodySchema.omit({ apiKey: true }).extend({
  _id: z.string(),
  hasApiKey: z.boolean(),
  /** What the provider is known to refuse or demand; `DELETE /api/providers/:id/quirks` forgets them. */
  quirks: z.array(providerQuirkSchema).default([]),
  /** Whether its model takes images, as its last check found (null: never checked). */
  images: providerImagesSchema.nullable().optional(),
  createdAt: dateSchema,
});
export type Provider = z.infer<typeof providerSchema>;

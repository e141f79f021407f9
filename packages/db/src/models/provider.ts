// An OpenAI-compatible provider of a user. The apiKey is stored only encrypted (AES-256-GCM).
import type { ModelParams, Pricing, ProviderImages, ProviderQuirk } from "@gadget/protocol";
import { type Connection, Schema, type Types } from "mongoose";

export interface ProviderDocument {
  _id: Types.ObjectId;
  user: Types.ObjectId;
  name: string;
  baseUrl: string;
  /** `v1:` + base64(iv ‖ tag ‖ ciphertext); never returned, never logged. */
  apiKeyEncrypted: string;
  hasApiKey: boolean;
  modelId: string;
  params: ModelParams;
  escalationModelId: string | null;
  contextWindow: number | null;
  pricing: Pricing | null;
  /** What turns learned the provider refuses or demands (one entry per code). */
  quirks: ProviderQuirk[];
  /** Whether its model takes images, as its last check found (decision 0051); null: unknown. */
  images?: ProviderImages | null;
  createdAt: Date;
}

export const providerSchema = new Schema<ProviderDocument>(
  {
    user: { type: Schema.Types.ObjectId, required: true, ref: "User" },
    name: { type: String, required: true },
    baseUrl: { type: String, required: true },
    apiKeyEncrypted: { type: String, required: true },
    hasApiKey: { type: Boolean, required: true },
    modelId: { type: String, required: true },
    params: { type: Schema.Types.Mixed, default: () => ({}) },
    escalationModelId: { type: String, default: null },
    contextWindow: { type: Number, default: null },
    pricing: { type: Schema.Types.Mixed, default: null },
    quirks: { type: Schema.Types.Mixed, default: () => [] },
    images: { type: Schema.Types.Mixed, default: null },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false, minimize: false },
);
providerSchema.index({ user: 1, createdAt: 1 });

export function providerModel(connection: Connection) {
  return connection.model<ProviderDocument>("Provider", providerSchema, "providers");
}

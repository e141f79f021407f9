// Random opaque secrets (user tokens, registration tokens, drone credentials) and their hashes.
import { createHash, randomBytes } from "node:crypto";

/** 32 random bytes as base64url behind a short prefix that says what the secret is. */
export function randomSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString("base64url")}`;
}

/** Hex SHA-256: secrets are stored and looked up only by this. */
export function sha256(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

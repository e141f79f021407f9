// Encrypts provider API keys at rest with AES-256-GCM under a key derived from GADGET_SECRET.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { SystemError } from "@gadget/protocol";

const version = "v1";

/** Seals and opens small secrets; the stored form is `v1:` + base64(iv ‖ tag ‖ ciphertext). */
export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

/**
 * Derives an AES-256 key from `secret` with HKDF-SHA256.
 * @example const box = createSecretBox(env.GADGET_SECRET); const stored = box.seal(apiKey);
 */
export function createSecretBox(secret: string): SecretBox {
  const key = Buffer.from(hkdfSync("sha256", secret, "gadget-code", "provider api keys v1", 32));
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      const tag = cipher.getAuthTag();
      return `${version}:${Buffer.concat([iv, tag, ciphertext]).toString("base64")}`;
    },
    open(sealed) {
      const [prefix, body] = sealed.split(":", 2);
      if (prefix !== version || !body)
        throw new SystemError("internal", "A stored secret is in an unknown format");
      const raw = Buffer.from(body, "base64");
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
    },
  };
}

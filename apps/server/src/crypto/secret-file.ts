// Outside production, GADGET_SECRET may be absent: one is generated once and kept in a file.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/** Reads `<dataDir>/secret`, creating it (mode 0600) with 32 random bytes when missing. */
export function loadOrCreateSecret(dataDir: string): string {
  const file = path.join(dataDir, "secret");
  try {
    const existing = readFileSync(file, "utf8").trim();
    if (existing.length >= 32) return existing;
  } catch {
    // Not there yet: create it below.
  }
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

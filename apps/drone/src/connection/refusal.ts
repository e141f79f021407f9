// Why the server refused the drone's connection, and whether reconnecting could ever fix it.
import { relayedCode, UserError } from "@gadget/protocol";
import type { DroneConfig } from "../config.ts";
import { droneRefusal } from "../server-api.ts";

/** A refusal at connect time that reconnecting will not fix. */
const finalRefusals = new Set([
  "unauthorized",
  "forbidden",
  "protocol_mismatch",
  "validation_failed",
]);

/**
 * The error to stop with when `error` (a Socket.IO `connect_error`) is final, else null (retry).
 * Without a code the socket's HTTP request itself was refused, or failed: the server is asked why,
 * and only a refused credential is final.
 */
export async function finalRefusal(
  error: Error & { data?: { code?: string } },
  config: Pick<DroneConfig, "server" | "droneId" | "credential">,
): Promise<UserError | null> {
  const code = error.data?.code;
  if (code) return finalRefusals.has(code) ? new UserError(relayedCode(code), error.message) : null;
  const refusal = await droneRefusal(config.server, config.droneId, config.credential);
  return refusal && finalRefusals.has(refusal.code)
    ? new UserError(relayedCode(refusal.code), refusal.message)
    : null;
}

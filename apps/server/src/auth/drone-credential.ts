// A drone proves itself with `Authorization: Drone <droneId>:<credential>` (REST and the HTTP
// request that opens its socket); only the credential's hash is stored.
import type { DroneDocument, Models } from "@gadget/db";
import { UserError } from "@gadget/protocol";
import { sha256 } from "../crypto/tokens.ts";

// Capped: a header is read before anything else is known about the caller.
const droneAuthorization = /^Drone ([0-9a-f]{24}):([\w-]{1,200})$/i;

/** What an `Authorization` header proves: a live drone, a revoked one, or nothing. */
export type DroneStanding =
  | { kind: "live"; drone: DroneDocument }
  | { kind: "revoked"; drone: DroneDocument }
  | { kind: "unknown" };

/**
 * Checks a drone's `Authorization` header against the stored credential hash.
 * @example const standing = await droneStanding(dependencies, request.headers.authorization);
 */
export async function droneStanding(
  dependencies: { models: Models },
  header: string | undefined,
): Promise<DroneStanding> {
  const match = droneAuthorization.exec(header ?? "");
  if (!match) return { kind: "unknown" };
  const [, droneId = "", credential = ""] = match;
  const drone = await dependencies.models.Drone.findById(droneId).lean<DroneDocument>();
  if (!drone || drone.credentialHash !== sha256(credential)) return { kind: "unknown" };
  return drone.revokedAt ? { kind: "revoked", drone } : { kind: "live", drone };
}

/** The live drone of a header; throws `unauthorized` or `forbidden` (revoked) in words a drone shows. */
export async function requireDrone(
  dependencies: { models: Models },
  header: string | undefined,
): Promise<DroneDocument> {
  const standing = await droneStanding(dependencies, header);
  if (standing.kind === "live") return standing.drone;
  if (standing.kind === "revoked") {
    throw new UserError("forbidden", "This drone was revoked: register it again to use it");
  }
  throw new UserError(
    "unauthorized",
    "Unknown drone or wrong credential: register the drone again (send Authorization: Drone <droneId>:<credential>)",
  );
}

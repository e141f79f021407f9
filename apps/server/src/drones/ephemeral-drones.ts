// Ephemeral drones (`gadget-drone start --ephemeral`) take one turn; once it has ended, however
// it ended, the drone is unregistered, so an autoscaled fleet leaves no stale drones behind.
import type { ChatTurnDocument, Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type { Locks } from "../redis/locks.ts";
import type { PresenceStore } from "./presence.ts";

export interface EphemeralDronesDependencies {
  models: Models;
  presence: PresenceStore;
  locks: Locks;
  logger: Logger;
}

export class EphemeralDrones {
  constructor(private readonly dependencies: EphemeralDronesDependencies) {}

  /**
   * Unregisters the drone that held `turn` if it is ephemeral: its credential stops working and
   * dispatch never picks it again. Its socket is left to close as the drone exits by itself.
   */
  async retire(turn: ChatTurnDocument): Promise<void> {
    if (!turn.drone) return;
    const { models, presence, locks } = this.dependencies;
    const droneId = String(turn.drone);
    const [live] = await presence.read([droneId]);
    // Presence says it for a connected drone; the document for one gone (or lost with Redis).
    const ephemeral =
      live?.ephemeral ||
      (!live?.socketId &&
        (await models.Drone.findById(droneId).select({ ephemeral: 1 }).lean())?.ephemeral) ||
      false;
    if (!ephemeral) return;
    await locks.with(`drone:${droneId}`, async () => {
      await models.Drone.updateOne(
        { _id: droneId, revokedAt: null },
        { $set: { revokedAt: new Date() } },
      );
      await presence.revoke(droneId, String(turn.user));
    });
    this.dependencies.logger.info({ droneId, turnId: String(turn._id) }, "ephemeral drone retired");
  }
}

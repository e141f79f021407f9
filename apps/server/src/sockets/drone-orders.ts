// What dispatch says to a drone: the work order (answered by the drone's ack) and, when a turn is
// no longer the drone's to run, `turn_cancel`. A drone connected to this server is told on its own
// socket; any other through its room (the Redis adapter carries it to the server holding it).
import type { Ack, IWorkOrder } from "@gadget/protocol";
import type { ResolvedConfig } from "../config.ts";
import type { Presence } from "../drones/presence.ts";
import { cancelOnDrone, type DronesNamespace, droneRoom } from "./rooms.ts";

/** The answer when no drone was in the room to hear the order. */
const notConnected: Ack = { ok: false, error: { code: "unavailable", message: "not connected" } };

export class DroneOrders {
  constructor(
    private readonly drones: DronesNamespace,
    private readonly config: Pick<
      ResolvedConfig,
      "serverId" | "workOrderAckTimeoutMs" | "droneRequestTimeoutMs"
    >,
  ) {}

  /**
   * Sends a work order; resolves with the drone's answer (a refusal when it is not connected), or
   * undefined if none came within `workOrderAckTimeoutMs`.
   * @example const answer = await orders.send(droneId, order, presence); if (answer?.ok) …
   */
  async send(
    droneId: string,
    order: IWorkOrder,
    presence: Presence | null,
  ): Promise<Ack | undefined> {
    const { serverId, workOrderAckTimeoutMs } = this.config;
    // A broadcast to the drone's room would first ask Redis how many servers there are, then
    // publish to all of them.
    const local =
      presence?.serverId === serverId && presence.socketId
        ? this.drones.sockets.get(presence.socketId)
        : undefined;
    try {
      if (local?.connected && local.rooms.has(droneRoom(droneId))) {
        return await local.timeout(workOrderAckTimeoutMs).emitWithAck("work_order", order);
      }
      const answers = await this.drones
        .to(droneRoom(droneId))
        .timeout(workOrderAckTimeoutMs)
        .emitWithAck("work_order", order);
      return answers[0] ?? notConnected;
    } catch {
      return undefined;
    }
  }

  /** Tells a drone to stop a turn it may still run (it may start late, or be back after all). */
  cancel(droneId: string, turnId: string): void {
    cancelOnDrone(this.drones, droneId, turnId, this.config.droneRequestTimeoutMs);
  }
}

// What dispatch says to a drone: the work order (answered by the drone's ack) and, when a turn is
// no longer the drone's to run, `turn_cancel`. A drone connected to this server is told on its own
// socket; any other through its room (the Redis adapter carries it to the server holding it).
import type { Ack, IWorkOrder } from "@gadget/protocol";
import { PacketType } from "socket.io-parser";
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
    if (local?.connected && local.rooms.has(droneRoom(droneId))) {
      try {
        return await local.timeout(workOrderAckTimeoutMs).emitWithAck("work_order", order);
      } catch {
        return undefined;
      }
    }
    return this.sendThroughRoom(droneId, order);
  }

  /**
   * The work order through the drone's room, taking the first answer. Socket.IO's `emitWithAck`
   * to a room also waits until every server has said how many of its sockets heard it, so one
   * busy server would hold up every dispatch to a drone elsewhere (at 4 processes on 2 cores, p50
   * 42 ms against 20 at one); a drone's room holds its one socket, so its answer is the answer.
   * It is "not connected" once every server has counted and none held the drone.
   */
  private sendThroughRoom(droneId: string, order: IWorkOrder): Promise<Ack | undefined> {
    const { workOrderAckTimeoutMs } = this.config;
    const adapter = this.drones.adapter;
    return new Promise((resolve) => {
      let settled = false;
      let servers = 0;
      let sockets = 0;
      let everyServer: number | null = null;
      const settle = (answer: Ack | undefined) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(answer);
      };
      const timer = setTimeout(() => settle(undefined), workOrderAckTimeoutMs);
      const counted = () => {
        if (everyServer !== null && servers >= everyServer && sockets === 0) settle(notConnected);
      };
      adapter.broadcastWithAck(
        { type: PacketType.EVENT, data: ["work_order", order], nsp: this.drones.name },
        {
          rooms: new Set([droneRoom(droneId)]),
          except: new Set(),
          flags: { timeout: workOrderAckTimeoutMs },
        },
        (heard) => {
          servers += 1;
          sockets += heard;
          counted();
        },
        (answer: Ack) => settle(answer),
      );
      adapter.serverCount().then(
        (count) => {
          everyServer = count;
          counted();
        },
        () => settle(undefined),
      );
    });
  }

  /** Tells a drone to stop a turn it may still run (it may start late, or be back after all). */
  cancel(droneId: string, turnId: string): void {
    cancelOnDrone(this.drones, droneId, turnId, this.config.droneRequestTimeoutMs);
  }
}

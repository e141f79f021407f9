// Tells the server about an update this drone refused, so its drones page says so: sent at once
// when connected, else again after each reconnect until the server acknowledged it.
import type { Ack, DroneUpdateRefusal } from "@gadget/protocol";
import type { DroneSocket } from "../streaming/sender.ts";

export class UpdateRefusalReport {
  private pending: DroneUpdateRefusal | null = null;

  constructor(private readonly socket: () => DroneSocket | undefined) {}

  /** Remembers `refusal` (replacing an earlier one) and sends it if the drone is connected. */
  report(refusal: DroneUpdateRefusal): void {
    this.pending = refusal;
    void this.send();
  }

  /** Sends what the server has not acknowledged yet (after a reconnect). */
  async send(): Promise<void> {
    const socket = this.socket();
    const refusal = this.pending;
    if (!refusal || !socket?.connected) return;
    try {
      const answer = (await socket
        .timeout(10_000)
        .emitWithAck("update_refused", { ...refusal, at: refusal.at.toISOString() })) as Ack;
      if (answer.ok && this.pending === refusal) this.pending = null;
    } catch {
      // Not acknowledged: the next connection sends it again.
    }
  }
}

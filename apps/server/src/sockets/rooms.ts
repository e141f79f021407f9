// The sockets' shared vocabulary: the two namespaces' types, what a socket carries, and the room
// names that reach a drone or a user's browsers from any server (through the Redis adapter).
// Names and types, and the cancel every part may send a drone, so each part that talks to a drone
// or a browser can use it.
import type {
  DroneClientToServerEvents,
  DroneServerToClientEvents,
  IdeClientToServerEvents,
  IdeServerToClientEvents,
} from "@gadget/protocol";
import type { Namespace } from "socket.io";

export interface DroneSocketData {
  droneId: string;
  userId: string;
  droneName: string;
}

export interface IdeSocketData {
  userId: string;
  /** The hash of the token it signed in with: revoking the token closes the socket. */
  tokenHash: string;
}

export type DronesNamespace = Namespace<
  DroneClientToServerEvents,
  DroneServerToClientEvents,
  Record<string, never>,
  DroneSocketData
>;
export type IdeNamespace = Namespace<
  IdeClientToServerEvents,
  IdeServerToClientEvents,
  Record<string, never>,
  IdeSocketData
>;

/** The room of a drone's one connection. */
export const droneRoom = (droneId: string) => `drone:${droneId}`;
/** The room of every browser socket of a user. */
export const userRoom = (userId: string) => `user:${userId}`;
/** The room every browser socket of a token joins, so revoking the token can close them. */
export const tokenRoom = (tokenHash: string) => `token:${tokenHash}`;

/**
 * Tells a drone, on whichever server it is connected, to stop running `turnId`; no answer is
 * awaited. With a timeout: the Redis adapter keeps a broadcast's id, to know its echo from Redis
 * as its own, only as long as the timeout (a millisecond without one), so a late echo (a busy
 * event loop) reached the drone twice.
 */
export function cancelOnDrone(
  drones: DronesNamespace,
  droneId: string,
  turnId: string,
  timeoutMs: number,
): void {
  drones
    .to(droneRoom(droneId))
    .timeout(timeoutMs)
    .emit("turn_cancel", { turnId }, () => undefined);
}

// The sockets' shared vocabulary: the two namespaces' types, what a socket carries, and the room
// names that reach a drone or a user's browsers from any server (through the Redis adapter).
// Names and types only, so every part that talks to a drone or a browser can use it.
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

// Writes what the /ide socket tells into the query cache, so every page showing drones shows them
// live; after each (re)connection the list is read again, since updates may have been missed.
import type { Drone } from "@gadget/protocol";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { useConnection } from "../app/live.tsx";
import { mergeDrone } from "./drones.ts";
import { keys } from "./keys.ts";

/** Mounted once while logged in (the app shell). */
export function useLiveCache(): void {
  const connection = useConnection();
  const client = useQueryClient();
  useEffect(() => {
    if (!connection) return;
    // Only a list someone has read is updated: an update for an unread list is dropped.
    const stopDrones = connection.onDrone((drone) =>
      client.setQueryData<Drone[]>(keys.drones, (drones) => drones && mergeDrone(drones, drone)),
    );
    const stopState = connection.onState((state) => {
      if (state === "connected") void client.invalidateQueries({ queryKey: keys.drones });
    });
    return () => {
      stopDrones();
      stopState();
    };
  }, [connection, client]);
}

// The user's drones through the query cache: the list, revoking one, saving its labels and making
// a registration command. The live socket keeps the list current (live-cache.ts).
import type { Drone, UpdateDroneBody } from "@gadget/protocol";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../app/auth.tsx";
import { keys } from "./keys.ts";

/** Merges a drone_update into the list: replace by id, or add a new drone at the top. */
export function mergeDrone(drones: Drone[], drone: Drone): Drone[] {
  const index = drones.findIndex((item) => item._id === drone._id);
  if (index < 0) return [drone, ...drones];
  const next = drones.slice();
  next[index] = drone;
  return next;
}

export function useDrones() {
  const api = useApi();
  return useQuery({
    queryKey: keys.drones,
    queryFn: async () => (await api.listDrones()).drones,
  });
}

export function useRevokeDrone() {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: (droneId: string) => api.revokeDrone(droneId),
    onSuccess: (_answer, droneId) =>
      client.setQueryData<Drone[]>(keys.drones, (drones) =>
        drones?.filter((item) => item._id !== droneId),
      ),
  });
}

export function useSaveDrone() {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async ({ droneId, body }: { droneId: string; body: UpdateDroneBody }) =>
      (await api.updateDrone(droneId, body)).drone,
    onSuccess: (drone) =>
      client.setQueryData<Drone[]>(keys.drones, (drones) => drones && mergeDrone(drones, drone)),
  });
}

/**
 * Follows a registration token until its drone is online: asked every 1.5 s, and not at all once
 * the live list (kept by the socket) shows the drone online.
 */
export function useRegistrationStatus(
  tokenId: string | undefined,
  liveStatus: (droneId: string) => string | undefined,
) {
  const api = useApi();
  return useQuery({
    queryKey: [...keys.drones, "registration", tokenId ?? ""],
    queryFn: () => api.registrationTokenStatus(tokenId!),
    enabled: Boolean(tokenId),
    refetchInterval: (query) => {
      const drone = query.state.data?.drone;
      const online = drone && (drone.status === "online" || liveStatus(drone._id) === "online");
      return online ? false : 1_500;
    },
  });
}

/** The drone package the server hands out, for the manual install; null when it has none. */
export function useDronePackage() {
  const api = useApi();
  return useQuery({
    queryKey: ["downloads", "gadget-drone"],
    queryFn: () => api.dronePackageInfo().catch(() => null),
    staleTime: 60_000,
  });
}

/** A one-time registration command; nothing is cached (the drone itself appears live). */
export function useRegistrationToken() {
  const api = useApi();
  return useMutation({ mutationFn: () => api.createRegistrationToken() });
}

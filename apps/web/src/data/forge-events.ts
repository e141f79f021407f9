// A project's forge events through the query cache: its latest deliveries, and a new webhook
// secret (shown once, never cached).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../app/auth.tsx";
import { keys } from "./keys.ts";

export function useForgeEvents(projectId: string, enabled: boolean) {
  const api = useApi();
  return useQuery({
    queryKey: keys.forgeEvents(projectId),
    queryFn: async () => (await api.listForgeEvents(projectId)).deliveries,
    enabled,
  });
}

/** The answer holds the secret: never kept in the cache; the project reads again (`hasEventsSecret`). */
export function useMakeForgeEventsSecret(projectId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => api.createForgeEventsSecret(projectId),
    gcTime: 0,
    onSuccess: () => client.invalidateQueries({ queryKey: keys.projects }),
  });
}

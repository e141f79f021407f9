// Model providers through the query cache: the list, adding, changing and deleting one, forgetting
// what turns learned it refuses, and the two checks (their answers are shown, not cached).
import type { CreateProviderBody, Provider, UpdateProviderBody } from "@gadget/protocol";
import { type QueryClient, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../app/auth.tsx";
import { keys } from "./keys.ts";

function replaceProvider(client: QueryClient, provider: Provider): void {
  client.setQueryData<Provider[]>(keys.providers, (providers) =>
    providers?.map((item) => (item._id === provider._id ? provider : item)),
  );
}

export function useProviders() {
  const api = useApi();
  return useQuery({
    queryKey: keys.providers,
    queryFn: async () => (await api.listProviders()).providers,
  });
}

export function useCreateProvider() {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (body: CreateProviderBody) => {
      const answer = await api.createProvider(body);
      return "provider" in answer ? answer.provider : answer;
    },
    onSuccess: (provider) =>
      client.setQueryData<Provider[]>(keys.providers, (providers) =>
        providers ? [...providers, provider] : providers,
      ),
  });
}

export function useUpdateProvider(providerId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (body: UpdateProviderBody) =>
      (await api.updateProvider(providerId, body)).provider,
    onSuccess: (provider) => replaceProvider(client, provider),
  });
}

export function useDeleteProvider(providerId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => api.deleteProvider(providerId),
    onSuccess: () =>
      client.setQueryData<Provider[]>(keys.providers, (providers) =>
        providers?.filter((item) => item._id !== providerId),
      ),
  });
}

export function useForgetQuirks(providerId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async () => (await api.forgetProviderQuirks(providerId)).provider,
    onSuccess: (provider) => replaceProvider(client, provider),
  });
}

/** Checks a saved provider with its stored key; what the probe learned shows in its row. */
export function useCheckSavedProvider(providerId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => api.checkSavedProvider(providerId),
    onSuccess: (result) => {
      if (result.quirks && result.quirks.length > 0) {
        void client.invalidateQueries({ queryKey: keys.providers });
      }
    },
  });
}

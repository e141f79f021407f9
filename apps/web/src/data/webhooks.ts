// Webhooks through the query cache: the list, adding one (its secret is shown once, never cached),
// deleting one, and each one's recent deliveries with a test delivery.
import type { CreateWebhookBody, Webhook } from "@gadget/protocol";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../app/auth.tsx";
import { keys } from "./keys.ts";

export function useWebhooks() {
  const api = useApi();
  return useQuery({
    queryKey: keys.webhooks,
    queryFn: async () => (await api.listWebhooks()).webhooks,
  });
}

/**
 * The answer carries the signing secret: the page shows it once; the list keeps the webhook only,
 * and the answer is dropped as soon as the page lets it go.
 */
export function useCreateWebhook() {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: CreateWebhookBody) => api.createWebhook(body),
    gcTime: 0,
    onSuccess: ({ webhook }) =>
      client.setQueryData<Webhook[]>(keys.webhooks, (webhooks) =>
        webhooks ? [...webhooks, webhook] : webhooks,
      ),
  });
}

export function useDeleteWebhook(webhookId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => api.deleteWebhook(webhookId),
    onSuccess: () => {
      client.setQueryData<Webhook[]>(keys.webhooks, (webhooks) =>
        webhooks?.filter((item) => item._id !== webhookId),
      );
      client.removeQueries({ queryKey: keys.deliveries(webhookId) });
    },
  });
}

export function useDeliveries(webhookId: string) {
  const api = useApi();
  return useQuery({
    queryKey: keys.deliveries(webhookId),
    queryFn: async () => (await api.listWebhookDeliveries(webhookId)).deliveries,
  });
}

/** Sends a test delivery; the deliveries are read again to show it. */
export function useTestWebhook(webhookId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => api.testWebhook(webhookId),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.deliveries(webhookId) }),
  });
}

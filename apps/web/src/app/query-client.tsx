// The web app's one TanStack Query client: what pages read from the server, cached and shared
// between pages, written by mutations and by the live socket, and forgotten at every login change.
import { QueryClient, QueryClientProvider, useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useState } from "react";

/**
 * The client's defaults: a failed request is shown at once with "Try again" (no silent retries,
 * as before), and a page shown again reads its data again in the background.
 */
export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: { retry: false },
      mutations: { retry: false },
    },
  });
}

/** Gives the app its query client, made once per mounted app. */
export function QueryProvider({ children }: { children: ReactNode }) {
  const [client] = useState(createQueryClient);
  return <QueryClientProvider client={client}>{children}</QueryClientProvider>;
}

/**
 * Empties the cache when the login changes: keys do not name the user, so nothing one login read
 * may be shown to the next. Runs after the signed-in pages have gone.
 */
export function useForgetOnLoginChange(token: string | null): void {
  const client = useQueryClient();
  useEffect(() => () => client.clear(), [client, token]);
}

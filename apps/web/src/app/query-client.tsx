// The web app's one TanStack Query client: what pages read from the server, cached and shared
// between pages, written by mutations and by the live socket (the app makes one per login).
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { type ReactNode, useState } from "react";

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

/** Gives what is inside its query client, made once per mount. */
export function QueryProvider({ children }: { children: ReactNode }) {
  const [client] = useState(createQueryClient);
  return <QueryClientProvider client={client}>{children}</QueryClientProvider>;
}

// Renders a component as the app does: inside its own query client, which its mutations and
// queries need; re-exports the rest of testing-library unchanged.
import { QueryClientProvider } from "@tanstack/react-query";
import { type RenderOptions, render as renderInDom } from "@testing-library/react";
import type { ReactElement, ReactNode } from "react";
import { createQueryClient } from "../app/query-client.tsx";

export * from "@testing-library/react";

/** testing-library's `render`, with a fresh query client around `ui` (and its rerenders). */
export function render(ui: ReactElement, options: Omit<RenderOptions, "wrapper"> = {}) {
  const client = createQueryClient();
  const wrapper = ({ children }: { children: ReactNode }) => (
    <QueryClientProvider client={client}>{children}</QueryClientProvider>
  );
  return renderInDom(ui, { ...options, wrapper });
}

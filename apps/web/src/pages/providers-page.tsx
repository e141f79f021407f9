// Providers: OpenAI-compatible endpoints with a model, key, optional escalation model and prices;
// "Check" asks the server to list the provider's /models (a browser cannot call them: CORS).
import type { Provider } from "@gadget/protocol";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { useApi } from "../app/auth.tsx";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import {
  useCreateProvider,
  useDeleteProvider,
  useForgetQuirks,
  useProviders,
  useUpdateProvider,
} from "../data/providers.ts";
import { formatAgo } from "../lib/format.ts";
import { describeQuirk } from "../lib/quirks.ts";
import { CheckResult, SavedProviderCheck } from "./provider-check.tsx";
import { ProviderForm } from "./provider-form.tsx";

function clip(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** What turns learned the provider refuses or demands, and a way to forget it. */
function ProviderQuirks({ provider }: { provider: Provider }) {
  const forget = useForgetQuirks(provider._id);
  if (provider.quirks.length === 0) return <span className="muted">–</span>;
  return (
    <div className="quirks">
      <ul aria-label={`What ${provider.name} refuses`}>
        {provider.quirks.map((quirk) => (
          <li key={quirk.code}>
            {describeQuirk(quirk.code)}{" "}
            <span className="muted small" title={quirk.message}>
              (learned {formatAgo(quirk.learnedAt)}: “{clip(quirk.message, 160)}”)
            </span>
          </li>
        ))}
      </ul>
      <button
        type="button"
        className="button small ghost"
        disabled={forget.isPending}
        onClick={() => forget.mutate()}
      >
        {forget.isPending ? "Forgetting…" : "Forget"}
      </button>
      <ErrorNote error={forget.error} title="Could not forget them" />
    </div>
  );
}

/** One saved provider: its row, and the edit form under it while open. */
function ProviderRow({
  provider,
  editing,
  onEdit,
}: {
  provider: Provider;
  editing: boolean;
  onEdit: (editing: boolean) => void;
}) {
  const api = useApi();
  const update = useUpdateProvider(provider._id);
  const remove = useDeleteProvider(provider._id);
  return (
    <>
      <tr>
        <td>
          <strong>{provider.name}</strong>
          {provider.hasApiKey ? null : <span className="muted small"> (no key)</span>}
        </td>
        <td data-label="Model">
          <code>{provider.modelId}</code>
        </td>
        <td data-label="Escalation">
          {provider.escalationModelId ? <code>{provider.escalationModelId}</code> : "–"}
        </td>
        <td data-label="Base URL" className="muted">
          {provider.baseUrl}
        </td>
        <td data-label="Prices ($/M in · out)">
          {provider.pricing
            ? `${provider.pricing.inputPerMTok} · ${provider.pricing.outputPerMTok}`
            : "–"}
        </td>
        <td data-label="Adapted requests">
          <ProviderQuirks provider={provider} />
        </td>
        <td className="right">
          <SavedProviderCheck provider={provider} />
          <button
            type="button"
            className="button small ghost"
            aria-expanded={editing}
            onClick={() => onEdit(!editing)}
          >
            Edit
          </button>
          <ConfirmButton
            label="Delete"
            question={`Delete ${provider.name}? Sessions choose another provider for their next turns.`}
            confirmLabel="Yes, delete"
            errorTitle="Could not delete the provider"
            onConfirm={() => remove.mutateAsync()}
          />
        </td>
      </tr>
      {editing ? (
        <tr className="edit-row">
          <td colSpan={7}>
            <ProviderForm
              provider={provider}
              onCancel={() => onEdit(false)}
              onCheck={({ baseUrl, apiKey }) =>
                apiKey
                  ? api.checkProvider({ baseUrl, apiKey })
                  : api.checkSavedProvider(provider._id)
              }
              onSave={async (body) => {
                await update.mutateAsync(body);
                onEdit(false);
              }}
            />
          </td>
        </tr>
      ) : null}
    </>
  );
}

export function ProvidersPage() {
  const providers = useProviders();
  const api = useApi();
  const create = useCreateProvider();
  const probe = useMutation({
    mutationFn: (providerId: string) => api.checkSavedProvider(providerId),
  });
  const [editing, setEditing] = useState<string | null>(null);
  return (
    <div className="page">
      <div className="page-head">
        <h1>Providers</h1>
      </div>
      {providers.error ? (
        <ErrorNote
          error={providers.error}
          title="Could not load providers"
          onRetry={() => void providers.refetch()}
        />
      ) : providers.data ? (
        providers.data.length === 0 ? (
          <p className="empty">No providers yet. Add the model API your drones should use.</p>
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Model</th>
                <th>Escalation</th>
                <th>Base URL</th>
                <th>Prices ($/M in · out)</th>
                <th>Adapted requests</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {providers.data.map((provider) => (
                <ProviderRow
                  key={provider._id}
                  provider={provider}
                  editing={editing === provider._id}
                  onEdit={(open) => setEditing(open ? provider._id : null)}
                />
              ))}
            </tbody>
          </table>
        )
      ) : (
        <p className="muted">Loading providers…</p>
      )}
      <ProviderForm
        onCheck={(body) => api.checkProvider(body)}
        onSave={async (body) => {
          const provider = await create.mutateAsync(body);
          // A saved provider is tried at once with the test call, so a bad key shows here.
          probe.mutate(provider._id);
        }}
      />
      {probe.data || probe.error ? (
        <section className="card" aria-label="Check after saving">
          <h2>Check of the new provider</h2>
          <CheckResult result={probe.data} error={probe.error} />
        </section>
      ) : probe.isPending ? (
        <p className="muted" role="status">
          Checking the new provider…
        </p>
      ) : null}
    </div>
  );
}

// Providers: OpenAI-compatible endpoints with a model, key, optional escalation model and prices;
// "Check" asks the server to list the provider's /models (a browser cannot call them: CORS).
import type {
  CreateProviderBody,
  Provider,
  ProviderQuirkCode,
  UpdateProviderBody,
} from "@gadget/protocol";
import { type FormEvent, useId, useState } from "react";
import { ApiError } from "../api/api-error.ts";
import type { ProviderCheckResult } from "../api/client.ts";
import { useApi } from "../app/auth.tsx";
import { useLoader } from "../app/use-loader.ts";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { formatAgo } from "../lib/format.ts";
import { describeQuirk } from "../lib/quirks.ts";

function optionalNumber(text: string): number | undefined {
  if (!text.trim()) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : Number.NaN;
}

/** Shows what a check found, or why it failed, in words. */
export function CheckResult({
  result,
  error,
}: {
  result: ProviderCheckResult | null;
  error: unknown;
}) {
  if (error) {
    if (error instanceof ApiError && error.status === 404) {
      return (
        <p className="note" role="status">
          This server cannot check providers yet. The key is checked on the first prompt instead.
        </p>
      );
    }
    return <ErrorNote error={error} title="Check failed" />;
  }
  if (!result) return null;
  // Turns call the provider from a drone; a check from the server may not see what a drone sees.
  const where =
    result.via === "drone"
      ? " (checked from your drone)"
      : result.via === "server"
        ? " (checked from the server: no drone of yours is online)"
        : "";
  if (!result.ok) {
    return (
      <div className="error-note" role="alert">
        <strong>The provider did not answer as expected{where}: </strong>
        {result.message ?? "no models listed"}
      </div>
    );
  }
  const models = result.models ?? [];
  return (
    <div className="ok-note" role="status">
      The provider answered with {models.length} model{models.length === 1 ? "" : "s"}
      {models.length > 0 ? ": " : "."}
      {models.slice(0, 12).map((model, index) => (
        <span key={model}>
          {index > 0 ? ", " : ""}
          <code>{model}</code>
        </span>
      ))}
      {models.length > 12 ? ` and ${models.length - 12} more` : null}
      {where}
      {result.probe ? <ProbeResult probe={result.probe} learned={result.quirks ?? []} /> : null}
    </div>
  );
}

const probeFeatures = [
  ["streaming", "Streaming"],
  ["toolCalling", "Tool calling"],
  ["reasoning", "Reasoning"],
  ["usage", "Usage reported"],
] as const;

/** What the probe call found: each feature the agent relies on, yes or no, and what was learned. */
function ProbeResult({
  probe,
  learned,
}: {
  probe: NonNullable<ProviderCheckResult["probe"]>;
  learned: ProviderQuirkCode[];
}) {
  return (
    <div className="probe">
      <ul className="probe-features" aria-label="What a test call found">
        {probeFeatures.map(([key, label]) => (
          <li key={key} className={probe[key] ? "yes" : "no"}>
            {label}: {probe[key] ? "yes" : "no"}
          </li>
        ))}
      </ul>
      {probe.message ? <p className="small">The test call: {probe.message}</p> : null}
      {learned.map((code) => (
        <p key={code} className="small">
          Learned: {describeQuirk(code)}.
        </p>
      ))}
    </div>
  );
}

function clip(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** What turns learned the provider refuses or demands, and a way to forget it. */
function ProviderQuirks({
  provider,
  onChange,
}: {
  provider: Provider;
  onChange: (provider: Provider) => void;
}) {
  const api = useApi();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
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
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          setError(null);
          try {
            onChange((await api.forgetProviderQuirks(provider._id)).provider);
          } catch (caught) {
            setError(caught);
          } finally {
            setBusy(false);
          }
        }}
      >
        {busy ? "Forgetting…" : "Forget"}
      </button>
      <ErrorNote error={error} title="Could not forget them" />
    </div>
  );
}

/** The add-provider form. */
export function ProviderForm({
  onCreate,
  onCheck,
}: {
  onCreate: (body: CreateProviderBody) => Promise<void>;
  onCheck: (body: {
    baseUrl: string;
    apiKey: string;
    modelId?: string;
  }) => Promise<ProviderCheckResult>;
}) {
  const [fields, setFields] = useState(emptyProviderFields);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [checking, setChecking] = useState(false);
  const [check, setCheck] = useState<{ result: ProviderCheckResult | null; error: unknown }>({
    result: null,
    error: null,
  });
  const set = (key: keyof typeof fields) => (event: { target: { value: string } }) =>
    setFields((current) => ({ ...current, [key]: event.target.value }));
  const modelList = useId();

  const buildBody = (): CreateProviderBody => {
    const body: CreateProviderBody = {
      name: fields.name.trim(),
      baseUrl: fields.baseUrl.trim().replace(/\/+$/, ""),
      apiKey: fields.apiKey,
      modelId: fields.modelId.trim(),
    };
    if (fields.escalationModelId.trim()) body.escalationModelId = fields.escalationModelId.trim();
    const input = optionalNumber(fields.inputPerMTok);
    const output = optionalNumber(fields.outputPerMTok);
    if (input !== undefined || output !== undefined) {
      body.pricing = { inputPerMTok: input ?? 0, outputPerMTok: output ?? 0 };
    }
    const contextWindow = optionalNumber(fields.contextWindow);
    if (contextWindow !== undefined) body.contextWindow = Math.round(contextWindow);
    const temperature = optionalNumber(fields.temperature);
    if (temperature !== undefined) body.params = { temperature };
    return body;
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaving(true);
    setError(null);
    try {
      await onCreate(buildBody());
      setFields(emptyProviderFields);
      setCheck({ result: null, error: null });
    } catch (caught) {
      setError(caught);
    } finally {
      setSaving(false);
    }
  };

  const runCheck = async () => {
    setChecking(true);
    setCheck({ result: null, error: null });
    try {
      const result = await onCheck({
        baseUrl: fields.baseUrl.trim().replace(/\/+$/, ""),
        apiKey: fields.apiKey,
        ...(fields.modelId.trim() ? { modelId: fields.modelId.trim() } : {}),
      });
      setCheck({ result, error: null });
    } catch (caught) {
      setCheck({ result: null, error: caught });
    } finally {
      setChecking(false);
    }
  };

  return (
    <form className="card form-grid" onSubmit={submit} aria-label="Add a provider">
      <h2>Add a provider</h2>
      <p className="muted small">
        Any OpenAI-compatible API: OpenAI, OpenRouter, a vLLM or Ollama server on your network. The
        key is encrypted on the server and never shown again.
      </p>
      <label className="field">
        <span>Name</span>
        <input required value={fields.name} onChange={set("name")} placeholder="OpenRouter" />
      </label>
      <label className="field">
        <span>Base URL</span>
        <input
          required
          type="url"
          value={fields.baseUrl}
          onChange={set("baseUrl")}
          placeholder="https://api.example.com/v1"
        />
      </label>
      <label className="field">
        <span>Model</span>
        <input
          required
          value={fields.modelId}
          onChange={set("modelId")}
          placeholder="gpt-4.1-mini"
          list={modelList}
        />
      </label>
      <ModelOptions id={modelList} models={check.result?.models} />
      <label className="field">
        <span>API key</span>
        <input
          type="password"
          value={fields.apiKey}
          onChange={set("apiKey")}
          autoComplete="off"
          placeholder="sk-…"
        />
      </label>
      <label className="field">
        <span>Escalation model (optional)</span>
        <input
          value={fields.escalationModelId}
          onChange={set("escalationModelId")}
          placeholder="a stronger model for hard passes"
          list={modelList}
        />
      </label>
      <div className="field-row">
        <CostFields fields={fields} set={set} />
        <label className="field">
          <span>Temperature</span>
          <input inputMode="decimal" value={fields.temperature} onChange={set("temperature")} />
        </label>
      </div>
      <CheckResult result={check.result} error={check.error} />
      <ErrorNote error={error} title="Could not add the provider" />
      <div className="form-actions">
        <button
          type="button"
          className="button"
          onClick={runCheck}
          disabled={checking || !fields.baseUrl.trim()}
        >
          {checking ? "Checking…" : "Check /models"}
        </button>
        <button type="submit" className="button primary" disabled={saving}>
          {saving ? "Adding…" : "Add provider"}
        </button>
      </div>
    </form>
  );
}

/**
 * The models a check listed, offered under a model field (a datalist: the user may still type
 * any id, e.g. one the provider serves but does not list).
 */
function ModelOptions({ id, models }: { id: string; models: string[] | undefined }) {
  return (
    <datalist id={id}>
      {(models ?? []).map((model) => (
        <option key={model} value={model} />
      ))}
    </datalist>
  );
}

/** Text of a number field: "" for none. */
function numberText(value: number | null | undefined): string {
  return value === null || value === undefined ? "" : String(value);
}

/**
 * Edits a saved provider in place. Only what changed is sent; the key field is empty (the stored
 * key is never shown) and a value typed there replaces it.
 */
export function ProviderEditForm({
  provider,
  onSave,
  onCheck,
  onCancel,
}: {
  provider: Provider;
  onSave: (body: UpdateProviderBody) => Promise<void>;
  /** Lists the provider's models: with the key typed here, or the stored one. */
  onCheck: (apiKey: string, baseUrl: string) => Promise<ProviderCheckResult>;
  onCancel: () => void;
}) {
  const [fields, setFields] = useState({
    name: provider.name,
    baseUrl: provider.baseUrl,
    apiKey: "",
    modelId: provider.modelId,
    escalationModelId: provider.escalationModelId ?? "",
    inputPerMTok: numberText(provider.pricing?.inputPerMTok),
    outputPerMTok: numberText(provider.pricing?.outputPerMTok),
    contextWindow: numberText(provider.contextWindow),
  });
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [checking, setChecking] = useState(false);
  const [check, setCheck] = useState<{ result: ProviderCheckResult | null; error: unknown }>({
    result: null,
    error: null,
  });
  const modelList = useId();
  const set = (key: keyof typeof fields) => (event: { target: { value: string } }) =>
    setFields((current) => ({ ...current, [key]: event.target.value }));

  const changes = (): UpdateProviderBody => {
    const body: UpdateProviderBody = {};
    const baseUrl = fields.baseUrl.trim().replace(/\/+$/, "");
    if (fields.name.trim() !== provider.name) body.name = fields.name.trim();
    if (baseUrl !== provider.baseUrl) body.baseUrl = baseUrl;
    if (fields.modelId.trim() !== provider.modelId) body.modelId = fields.modelId.trim();
    if (fields.apiKey) body.apiKey = fields.apiKey;
    const escalation = fields.escalationModelId.trim();
    if (escalation !== (provider.escalationModelId ?? "")) {
      body.escalationModelId = escalation || null;
    }
    const input = optionalNumber(fields.inputPerMTok);
    const output = optionalNumber(fields.outputPerMTok);
    const pricing =
      input === undefined && output === undefined
        ? null
        : { inputPerMTok: input ?? 0, outputPerMTok: output ?? 0 };
    if (
      pricing?.inputPerMTok !== provider.pricing?.inputPerMTok ||
      pricing?.outputPerMTok !== provider.pricing?.outputPerMTok
    ) {
      body.pricing = pricing;
    }
    const contextWindow = optionalNumber(fields.contextWindow);
    if ((contextWindow ?? null) !== (provider.contextWindow ?? null)) {
      body.contextWindow = contextWindow === undefined ? null : Math.round(contextWindow);
    }
    return body;
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaving(true);
    setError(null);
    try {
      await onSave(changes());
    } catch (caught) {
      setError(caught);
    } finally {
      setSaving(false);
    }
  };

  return (
    <form
      className="form-grid provider-edit"
      onSubmit={submit}
      aria-label={`Edit ${provider.name}`}
    >
      <label className="field">
        <span>Name</span>
        <input required value={fields.name} onChange={set("name")} />
      </label>
      <label className="field">
        <span>Base URL</span>
        <input required type="url" value={fields.baseUrl} onChange={set("baseUrl")} />
      </label>
      <label className="field">
        <span>Model</span>
        <input required value={fields.modelId} onChange={set("modelId")} list={modelList} />
      </label>
      <ModelOptions id={modelList} models={check.result?.models} />
      <label className="field">
        <span>New API key</span>
        <input
          type="password"
          value={fields.apiKey}
          onChange={set("apiKey")}
          autoComplete="off"
          placeholder={provider.hasApiKey ? "leave empty to keep the stored key" : "sk-…"}
        />
      </label>
      <label className="field">
        <span>Escalation model (optional)</span>
        <input
          value={fields.escalationModelId}
          onChange={set("escalationModelId")}
          list={modelList}
        />
      </label>
      <div className="field-row">
        <CostFields fields={fields} set={set} />
      </div>
      <CheckResult result={check.result} error={check.error} />
      <ErrorNote error={error} title="Could not save the provider" />
      <div className="form-actions">
        <button
          type="button"
          className="button"
          disabled={checking}
          onClick={async () => {
            setChecking(true);
            setCheck({ result: null, error: null });
            try {
              const result = await onCheck(
                fields.apiKey,
                fields.baseUrl.trim().replace(/\/+$/, ""),
              );
              setCheck({ result, error: null });
            } catch (caught) {
              setCheck({ result: null, error: caught });
            } finally {
              setChecking(false);
            }
          }}
        >
          {checking ? "Checking…" : "Check /models"}
        </button>
        <button type="button" className="button ghost" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="button primary" disabled={saving}>
          {saving ? "Saving…" : "Save"}
        </button>
      </div>
    </form>
  );
}

function providerOf(answer: { provider: Provider } | Provider): Provider {
  return "provider" in answer ? answer.provider : answer;
}

function SavedProviderCheck({
  provider,
  onChecked,
}: {
  provider: Provider;
  /** Called after a check: it may have learned quirks, which the row then shows. */
  onChecked: () => void;
}) {
  const api = useApi();
  const [state, setState] = useState<{
    result: ProviderCheckResult | null;
    error: unknown;
    busy: boolean;
  }>({
    result: null,
    error: null,
    busy: false,
  });
  return (
    <>
      <button
        type="button"
        className="button small ghost"
        disabled={state.busy}
        onClick={async () => {
          setState({ result: null, error: null, busy: true });
          try {
            const result = await api.checkSavedProvider(provider._id);
            setState({ result, error: null, busy: false });
            if (result.quirks && result.quirks.length > 0) onChecked();
          } catch (error) {
            setState({ result: null, error, busy: false });
          }
        }}
      >
        {state.busy ? "Checking…" : "Check"}
      </button>
      <CheckResult result={state.result} error={state.error} />
    </>
  );
}

/** The add form's fields before anything is typed (and again after a provider is added). */
const emptyProviderFields = {
  name: "",
  baseUrl: "",
  apiKey: "",
  modelId: "",
  escalationModelId: "",
  inputPerMTok: "",
  outputPerMTok: "",
  contextWindow: "",
  temperature: "",
};

/** Prices and context window: the same fields in the add and the edit forms. */
function CostFields({
  fields,
  set,
}: {
  fields: { inputPerMTok: string; outputPerMTok: string; contextWindow: string };
  set: (
    key: "inputPerMTok" | "outputPerMTok" | "contextWindow",
  ) => (event: { target: { value: string } }) => void;
}) {
  return (
    <>
      <label className="field">
        <span>Input $ / M tokens</span>
        <input inputMode="decimal" value={fields.inputPerMTok} onChange={set("inputPerMTok")} />
      </label>
      <label className="field">
        <span>Output $ / M tokens</span>
        <input inputMode="decimal" value={fields.outputPerMTok} onChange={set("outputPerMTok")} />
      </label>
      <label className="field">
        <span>Context window</span>
        <input inputMode="numeric" value={fields.contextWindow} onChange={set("contextWindow")} />
      </label>
    </>
  );
}

export function ProvidersPage() {
  const api = useApi();
  const providers = useLoader(() => api.listProviders().then((answer) => answer.providers), [api]);
  const [editing, setEditing] = useState<string | null>(null);
  const replace = (changed: Provider) =>
    providers.setData((current) =>
      (current ?? []).map((item) => (item._id === changed._id ? changed : item)),
    );
  return (
    <div className="page">
      <div className="page-head">
        <h1>Providers</h1>
      </div>
      {providers.error ? (
        <ErrorNote
          error={providers.error}
          title="Could not load providers"
          onRetry={providers.reload}
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
                <th />
              </tr>
            </thead>
            <tbody>
              {providers.data.flatMap((provider) => [
                <tr key={provider._id}>
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
                    <ProviderQuirks provider={provider} onChange={replace} />
                  </td>
                  <td className="right">
                    <SavedProviderCheck provider={provider} onChecked={providers.reload} />
                    <button
                      type="button"
                      className="button small ghost"
                      aria-expanded={editing === provider._id}
                      onClick={() =>
                        setEditing((current) => (current === provider._id ? null : provider._id))
                      }
                    >
                      Edit
                    </button>
                    <ConfirmButton
                      label="Delete"
                      question={`Delete ${provider.name}? Sessions choose another provider for their next turns.`}
                      confirmLabel="Yes, delete"
                      errorTitle="Could not delete the provider"
                      onConfirm={async () => {
                        await api.deleteProvider(provider._id);
                        providers.setData((current) =>
                          (current ?? []).filter((item) => item._id !== provider._id),
                        );
                      }}
                    />
                  </td>
                </tr>,
                editing === provider._id ? (
                  <tr key={`${provider._id}-edit`} className="edit-row">
                    <td colSpan={7}>
                      <ProviderEditForm
                        provider={provider}
                        onCancel={() => setEditing(null)}
                        onCheck={(apiKey, baseUrl) =>
                          apiKey
                            ? api.checkProvider({ baseUrl, apiKey })
                            : api.checkSavedProvider(provider._id)
                        }
                        onSave={async (body) => {
                          replace((await api.updateProvider(provider._id, body)).provider);
                          setEditing(null);
                        }}
                      />
                    </td>
                  </tr>
                ) : null,
              ])}
            </tbody>
          </table>
        )
      ) : (
        <p className="muted">Loading providers…</p>
      )}
      <ProviderForm
        onCheck={(body) => api.checkProvider(body)}
        onCreate={async (body) => {
          const created = providerOf(await api.createProvider(body));
          providers.setData((current) => [...(current ?? []), created]);
        }}
      />
    </div>
  );
}

// What a provider check found: the models its /models listed and, for a saved provider, what one
// small test call offering a tool showed (streaming, tool calling, reasoning, usage) and learned.
import type { Provider, ProviderQuirkCode } from "@gadget/protocol";
import { ApiError } from "../api/api-error.ts";
import type { ProviderCheckResult } from "../api/client.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { useCheckSavedProvider } from "../data/providers.ts";
import { describeQuirk } from "../lib/quirks.ts";

/** Shows what a check found, or why it failed, in words. */
export function CheckResult({
  result,
  error,
}: {
  result: ProviderCheckResult | null | undefined;
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
        {probe.images === undefined ? null : (
          <li className={probe.images ? "yes" : "no"}>Images: {probe.images ? "yes" : "no"}</li>
        )}
      </ul>
      {probe.message ? <p className="small">The test call: {probe.message}</p> : null}
      {probe.imagesMessage ? <p className="small">The image call: {probe.imagesMessage}</p> : null}
      {learned.map((code) => (
        <p key={code} className="small">
          Learned: {describeQuirk(code)}.
        </p>
      ))}
    </div>
  );
}

/** "Check" in a saved provider's row: its stored key, and the probe call. */
export function SavedProviderCheck({ provider }: { provider: Provider }) {
  const check = useCheckSavedProvider(provider._id);
  return (
    <>
      <button
        type="button"
        className="button small ghost"
        disabled={check.isPending}
        onClick={() => check.mutate()}
      >
        {check.isPending ? "Checking…" : "Check"}
      </button>
      <CheckResult result={check.data} error={check.error} />
    </>
  );
}

// The prompt composer: Enter sends, Shift+Enter adds a line; pick the provider and, optionally, a drone.
import type { Drone, Provider, TurnLimits } from "@gadget/protocol";
import { type FormEvent, type KeyboardEvent, useId, useState } from "react";
import { ErrorNote } from "../components/error-note.tsx";

export interface ComposerSubmission {
  prompt: string;
  providerId: string;
  droneId?: string;
  limits?: TurnLimits;
}

export interface ComposerProps {
  providers: Provider[];
  drones: Drone[];
  /** Sends the prompt; rejects with an error to show (the text is kept then). */
  onSend: (submission: ComposerSubmission) => Promise<void>;
  /** The provider to preselect (the last one used). */
  defaultProviderId?: string;
  disabled?: boolean;
  /** Why sending is not possible right now, in words. */
  disabledReason?: string;
}

function parseLimit(text: string, integer: boolean): number | undefined {
  const value = Number(text);
  if (!text.trim() || !Number.isFinite(value) || value <= 0) return undefined;
  return integer ? Math.round(value) : value;
}

/** Writes a prompt and sends it as a new turn. */
export function Composer({
  providers,
  drones,
  onSend,
  defaultProviderId,
  disabled = false,
  disabledReason,
}: ComposerProps) {
  const id = useId();
  const [prompt, setPrompt] = useState("");
  const [providerId, setProviderId] = useState(
    () =>
      (defaultProviderId && providers.some((p) => p._id === defaultProviderId)
        ? defaultProviderId
        : providers[0]?._id) ?? "",
  );
  const [droneId, setDroneId] = useState("");
  const [costBudget, setCostBudget] = useState("");
  const [maxPasses, setMaxPasses] = useState("");
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const chosenProvider = providers.some((p) => p._id === providerId)
    ? providerId
    : (providers[0]?._id ?? "");
  const canSend = !disabled && !sending && prompt.trim().length > 0 && chosenProvider !== "";

  const send = async () => {
    if (!canSend) return;
    setSending(true);
    setError(null);
    const limits: TurnLimits = {};
    const budget = parseLimit(costBudget, false);
    const passes = parseLimit(maxPasses, true);
    if (budget !== undefined) limits.costBudget = budget;
    if (passes !== undefined) limits.maxPasses = passes;
    try {
      await onSend({
        prompt: prompt.trim(),
        providerId: chosenProvider,
        ...(droneId ? { droneId } : {}),
        ...(Object.keys(limits).length > 0 ? { limits } : {}),
      });
      setPrompt("");
    } catch (caught) {
      setError(caught);
    } finally {
      setSending(false);
    }
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    // Enter while an input method is composing (e.g. Japanese) confirms the text, not the prompt.
    if (event.key !== "Enter" || event.shiftKey || event.nativeEvent.isComposing) return;
    event.preventDefault();
    void send();
  };
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    void send();
  };

  return (
    <form className="composer" onSubmit={onSubmit} aria-label="Send a prompt">
      <label htmlFor={`${id}-prompt`} className="visually-hidden">
        Prompt
      </label>
      <textarea
        id={`${id}-prompt`}
        value={prompt}
        rows={3}
        placeholder="Ask Gadget to do something… (Enter sends, Shift+Enter for a new line)"
        onChange={(event) => setPrompt(event.target.value)}
        onKeyDown={onKeyDown}
        disabled={disabled}
      />
      <ErrorNote error={error} title="The prompt was not sent" />
      <div className="composer-bar">
        <label>
          Provider{" "}
          <select
            value={chosenProvider}
            onChange={(event) => setProviderId(event.target.value)}
            disabled={providers.length === 0}
          >
            {providers.length === 0 ? <option value="">No provider yet</option> : null}
            {providers.map((provider) => (
              <option key={provider._id} value={provider._id}>
                {provider.name} · {provider.modelId}
              </option>
            ))}
          </select>
        </label>
        <label>
          Drone{" "}
          <select value={droneId} onChange={(event) => setDroneId(event.target.value)}>
            <option value="">Any online drone</option>
            {drones.map((drone) => (
              <option key={drone._id} value={drone._id}>
                {drone.name} ({drone.status})
              </option>
            ))}
          </select>
        </label>
        <details className="composer-limits">
          <summary>Limits</summary>
          <label>
            Cost budget ($){" "}
            <input
              inputMode="decimal"
              value={costBudget}
              onChange={(event) => setCostBudget(event.target.value)}
              placeholder="none"
              size={6}
            />
          </label>
          <label>
            Max passes{" "}
            <input
              inputMode="numeric"
              value={maxPasses}
              onChange={(event) => setMaxPasses(event.target.value)}
              placeholder="none"
              size={4}
            />
          </label>
        </details>
        <span className="spacer" />
        {disabledReason ? <span className="muted small">{disabledReason}</span> : null}
        <button type="submit" className="button primary" disabled={!canSend}>
          {sending ? "Sending…" : "Send"}
        </button>
      </div>
    </form>
  );
}

// Write-only environment variables (an MCP server's, a project's): the names of those set, each
// removable, and new ones as KEY=VALUE lines. Values are stored encrypted and never shown again.
import { useId } from "react";

/** Variables as the body sends them: kept names `null` (the stored value stays), lines parsed. */
export function envBodyOf(kept: readonly string[], text: string): Record<string, string | null> {
  const env: Record<string, string | null> = {};
  for (const name of kept) env[name] = null;
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const equals = line.indexOf("=");
    const name = (equals === -1 ? line : line.slice(0, equals)).trim();
    env[name] = equals === -1 ? "" : line.slice(equals + 1);
  }
  return env;
}

/** The names that are set (each with a remove button) and a box for new `KEY=VALUE` lines. */
export function EnvEditor({
  kept,
  text,
  placeholder,
  label,
  showLabel = false,
  onKept,
  onText,
}: {
  kept: readonly string[];
  text: string;
  placeholder: string;
  label: string;
  /** The label on screen above the box (where no field around it names it). */
  showLabel?: boolean;
  onKept: (kept: string[]) => void;
  onText: (text: string) => void;
}) {
  const id = useId();
  return (
    <>
      {showLabel ? (
        <label htmlFor={id} className="field-label">
          {label}
        </label>
      ) : null}
      {kept.length > 0 ? (
        <div className="muted small">
          Set (values hidden):{" "}
          {kept.map((name) => (
            <button
              key={name}
              type="button"
              className="button small"
              aria-label={`Remove ${name}`}
              onClick={() => onKept(kept.filter((other) => other !== name))}
            >
              {name} ✕
            </button>
          ))}
        </div>
      ) : null}
      <textarea
        rows={2}
        value={text}
        placeholder={placeholder}
        {...(showLabel ? { id } : { "aria-label": label })}
        onChange={(event) => onText(event.target.value)}
      />
    </>
  );
}

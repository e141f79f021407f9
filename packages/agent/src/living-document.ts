// The living document (docs/architecture.md): sections the model keeps across passes, stored in the state.
import type { TurnState } from "./state.ts";
import type { LivingDocument } from "./tool.ts";

/** A LivingDocument that writes into `state.document` and remembers whether it changed. */
export class StateDocument implements LivingDocument {
  #state: TurnState;
  #maxSectionChars: number;
  /** Bumped on every update, so the runner knows when to emit `document_update`. */
  version = 0;

  constructor(state: TurnState, maxSectionChars: number) {
    this.#state = state;
    this.#maxSectionChars = maxSectionChars;
  }

  get sections(): Readonly<Record<string, string>> {
    return this.#state.document.sections;
  }

  /** Appends each update with a pass label; `confidence` is replaced: it is a current value, not a log. */
  update(sections: Record<string, string>): Record<string, string> {
    const target = this.#state.document.sections;
    const pass = this.#state.passCount;
    for (const [name, value] of Object.entries(sections)) {
      if (typeof value !== "string") continue;
      if (name === "confidence") {
        target[name] = value;
        continue;
      }
      const existing = target[name];
      const line = `[Pass ${pass}] ${value}`;
      target[name] = boundSection(existing ? `${existing}\n${line}` : line, this.#maxSectionChars);
    }
    this.version += 1;
    return { ...target };
  }
}

/** Keeps a section under `limit` characters by dropping its oldest text. */
function boundSection(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const tail = text.slice(text.length - limit);
  const lineStart = tail.indexOf("\n");
  return `[…earlier entries dropped]\n${lineStart >= 0 ? tail.slice(lineStart + 1) : tail}`;
}

/** The document as markdown for prompts. */
export function formatDocument(sections: Readonly<Record<string, string>>): string {
  return Object.entries(sections)
    .map(([name, text]) => `#### ${name}\n${text}`)
    .join("\n\n");
}

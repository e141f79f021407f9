// The composer's `/` list: while the prompt is `/` and a partial name, the project's commands that
// match (files of `.gadget/commands/`, MCP prompts) with their descriptions. Arrow keys move, Tab or
// Enter takes one (the prompt becomes `/<name> `), Escape closes it, a click takes one too.
import type { ProjectCommand } from "@gadget/protocol";
import { type KeyboardEvent, useState } from "react";

/** Most suggestions shown at once. */
const shownAtMost = 8;

/** The commands whose name starts with what follows `/` (then those that contain it). */
export function matchingCommands(prompt: string, commands: readonly ProjectCommand[]) {
  const typed = /^\/([A-Za-z0-9_.-]*)$/.exec(prompt)?.[1];
  if (typed === undefined) return [];
  const wanted = typed.toLowerCase();
  const starts = commands.filter((command) => command.name.toLowerCase().startsWith(wanted));
  const contains = commands.filter(
    (command) => !starts.includes(command) && command.name.toLowerCase().includes(wanted),
  );
  return [...starts, ...contains].slice(0, shownAtMost);
}

/**
 * The list for `prompt`, and the key handling the composer's textarea runs first: `onKeyDown`
 * answers true when it took the key.
 */
export function useCommandSuggestions(
  prompt: string,
  commands: readonly ProjectCommand[],
  choose: (text: string) => void,
) {
  const [active, setActive] = useState(0);
  const [dismissed, setDismissed] = useState<string | null>(null);
  const matches = dismissed === prompt ? [] : matchingCommands(prompt, commands);
  const open = matches.length > 0;
  const current = Math.min(active, matches.length - 1);
  const take = (command: ProjectCommand) => {
    setActive(0);
    choose(`/${command.name} `);
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>): boolean => {
    if (!open || event.nativeEvent.isComposing) return false;
    const step = event.key === "ArrowDown" ? 1 : event.key === "ArrowUp" ? -1 : 0;
    if (step !== 0) {
      setActive((current + step + matches.length) % matches.length);
    } else if (event.key === "Tab" || (event.key === "Enter" && !event.shiftKey)) {
      take(matches[current] as ProjectCommand);
    } else if (event.key === "Escape") {
      setDismissed(prompt);
    } else return false;
    event.preventDefault();
    return true;
  };

  const list = open ? (
    <div className="command-suggestions" role="listbox" aria-label="Commands" id="command-list">
      {matches.map((command, index) => (
        <div
          key={command.name}
          id={`command-${index}`}
          className="command-option"
          role="option"
          tabIndex={-1}
          aria-selected={index === current}
          // Keeps the focus in the textarea: the click takes the command.
          onMouseDown={(event) => {
            event.preventDefault();
            take(command);
          }}
        >
          <code>/{command.name}</code>
          {command.argumentHint ? <span className="muted"> {command.argumentHint}</span> : null}
          <span className="command-description">
            {command.description}
            {command.source === "mcp" ? ` · MCP ${command.server ?? ""}` : ""}
          </span>
        </div>
      ))}
    </div>
  ) : null;
  return {
    onKeyDown,
    list,
    /** For the textarea: names the list and the option the arrow keys are on. */
    textareaProps: open
      ? { "aria-controls": "command-list", "aria-activedescendant": `command-${current}` }
      : {},
  };
}

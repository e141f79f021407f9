// What each session mode does, in the words the mode selects show: the agent's own instructions
// for each mode (packages/agent/src/prompt.ts), shortened.
import type { TurnMode } from "@gadget/protocol";

export const modeChoices: ReadonlyArray<{ value: TurnMode; label: string; hint: string }> = [
  { value: "agent", label: "agent", hint: "reads, writes and runs code to do what you ask" },
  { value: "ask", label: "ask", hint: "answers questions about the code; changes nothing" },
  {
    value: "tester",
    label: "tester",
    hint: "writes and runs tests for what you name; fixes code only for a bug a test shows",
  },
  {
    value: "docser",
    label: "docser",
    hint: "writes docs (README, docs/, comments) to match the code; changes no behaviour",
  },
];

/** The one-line explanation of `mode`. */
export function modeHint(mode: string): string {
  return modeChoices.find((choice) => choice.value === mode)?.hint ?? "";
}

// Provider quirks in words: what the drone now sends differently to a provider, and why.
import type { ProviderQuirkCode } from "@gadget/protocol";

const descriptions: Record<ProviderQuirkCode, string> = {
  no_temperature: "temperature is not sent (the model refuses it)",
  no_top_p: "top_p is not sent (the model refuses it)",
  max_completion_tokens: "the answer limit is sent as max_completion_tokens",
  no_stream_options: "stream_options is not sent (token usage is estimated)",
  echo_reasoning: "the model's reasoning is sent back with its earlier messages",
  no_reasoning_echo: "the model's reasoning is not sent back",
  short_tool_call_ids: "tool-call ids are rewritten to 9 letters and digits",
};

/**
 * What a quirk changes, in a sentence a user understands.
 * @example describeQuirk("no_temperature") // "temperature is not sent (the model refuses it)"
 */
export function describeQuirk(code: ProviderQuirkCode): string {
  return descriptions[code];
}

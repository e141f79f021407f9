// Rejections a provider gives for a documented reason, and the quirk that answers each: the
// engine turns the quirk on and sends the call again instead of failing the turn. Each pattern
// matches a recorded answer (see __fixtures__/rejections/index.json and the README).
import type { ProviderQuirkCode } from "@gadget/protocol";
import type { ChatRequest } from "./chat-model.ts";

/** A quirk learned from a rejection, with the provider's words (the `provider_adapted` data). */
export interface LearnedQuirk {
  quirk: ProviderQuirkCode;
  message: string;
}

/** What a provider said when it refused a request, and the quirk that avoids it. */
export interface Rejection {
  quirk: ProviderQuirkCode;
  /** The provider's own words. */
  message: string;
}

interface RejectionRule {
  quirk: ProviderQuirkCode;
  pattern: RegExp;
  /** The rule applies only when the request sent what the provider refused. */
  sent: (request: ChatRequest) => boolean;
}

const hasReasoningEcho = (request: ChatRequest) =>
  request.messages.some((message) => "reasoning_content" in message);

const rules: RejectionRule[] = [
  {
    // "Unsupported value: 'temperature' does not support 0.7 …" and "Unsupported parameter: 'temperature' …"
    quirk: "no_temperature",
    pattern:
      /unsupported (?:value|parameter): '?temperature'?|extra inputs are not permitted,? field: '?temperature/i,
    sent: (request) => request.temperature !== undefined,
  },
  {
    quirk: "no_top_p",
    pattern:
      /unsupported (?:value|parameter): '?top_p'?|extra inputs are not permitted,? field: '?top_p/i,
    sent: (request) => request.topP !== undefined,
  },
  {
    // "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
    quirk: "max_completion_tokens",
    pattern: /'?max_tokens'? is not supported[\s\S]*max_completion_tokens/i,
    sent: (request) => request.maxTokens !== undefined,
  },
  {
    // Fireworks: "Extra inputs are not permitted, field: 'stream_options'"; pydantic-strict servers alike.
    quirk: "no_stream_options",
    pattern:
      /stream_options'?[\s\S]{0,80}(?:extra inputs are not permitted|extra_forbidden|not supported|unrecognized|unknown)|(?:extra inputs are not permitted|unsupported parameter|unrecognized request argument|unknown (?:field|parameter))[\s\S]{0,80}stream_options/i,
    sent: (request) => !request.quirks?.includes("no_stream_options"),
  },
  {
    // DeepSeek thinking mode with tools: "Missing `reasoning_content` field in the assistant message …"
    quirk: "echo_reasoning",
    pattern: /missing `?reasoning_content`? field/i,
    sent: () => true,
  },
  {
    // Mistral: {"type":"extra_forbidden","loc":["body","messages",2,"assistant","reasoning_content"],…}
    quirk: "no_reasoning_echo",
    pattern:
      /reasoning_content[\s\S]{0,120}(?:extra inputs are not permitted|extra_forbidden|not supported|unrecognized|unknown)|(?:extra inputs are not permitted|extra_forbidden|unrecognized|unknown field)[\s\S]{0,120}reasoning_content/i,
    sent: hasReasoningEcho,
  },
  {
    // Mistral: "Tool call id was call_… but must be a-z, A-Z, 0-9, with a length of 9."
    quirk: "short_tool_call_ids",
    pattern: /tool call id was .* but must be a-z, a-z, 0-9, with a length of 9/i,
    sent: () => true,
  },
];

/** Statuses a refused field comes back with: 400, and 422 from pydantic-validated servers. */
const rejectionStatuses = new Set([400, 422]);

/**
 * The documented rejection `error` is, for the `request` that caused it, or undefined.
 * @example rejectionOf(new BadRequestError(400, { message: "Unsupported parameter: 'temperature' …" }), request)
 */
export function rejectionOf(error: unknown, request: ChatRequest): Rejection | undefined {
  const candidate = (error ?? {}) as { status?: unknown; message?: unknown; error?: unknown };
  if (typeof candidate.status !== "number" || !rejectionStatuses.has(candidate.status))
    return undefined;
  const message = providerMessage(candidate);
  // The body as well as the message: a validation error's words may sit in nested fields.
  const text = `${message}\n${safeJson(candidate.error)}`;
  const rule = rules.find((entry) => entry.pattern.test(text) && entry.sent(request));
  return rule ? { quirk: rule.quirk, message } : undefined;
}

/** The provider's message without the SDK's "400 " prefix. */
function providerMessage(candidate: { status?: unknown; message?: unknown; error?: unknown }) {
  const body = candidate.error as { message?: unknown } | undefined;
  if (typeof body?.message === "string") return body.message;
  if (body?.message !== undefined) return safeJson(body.message);
  const text = typeof candidate.message === "string" ? candidate.message : "";
  return text.replace(/^\d{3}\s+/, "");
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "";
  }
}

/** Quirks that contradict each other: turning one on turns the other off. */
export const oppositeQuirk: Partial<Record<ProviderQuirkCode, ProviderQuirkCode>> = {
  echo_reasoning: "no_reasoning_echo",
  no_reasoning_echo: "echo_reasoning",
};

/** Turns `quirk` on in `quirks` (and its opposite off). */
export function activateQuirk(quirks: Set<ProviderQuirkCode>, quirk: ProviderQuirkCode): void {
  const opposite = oppositeQuirk[quirk];
  if (opposite) quirks.delete(opposite);
  quirks.add(quirk);
}

// Token usage and cost: summed per call from what the provider reports, priced per million tokens.
import type { Pricing, TokenUsage } from "@gadget/protocol";

export function emptyUsage(): TokenUsage {
  return { input: 0, output: 0, reasoning: 0, cached: 0 };
}

/** Adds `delta` into `total` in place. */
export function addUsage(total: TokenUsage, delta: TokenUsage): void {
  total.input += delta.input;
  total.output += delta.output;
  total.reasoning += delta.reasoning;
  total.cached += delta.cached;
}

/**
 * Cost of one call. Cached input is priced at `cachedInputPerMTok` when given, else as input;
 * reasoning tokens are part of the output tokens (as OpenAI reports them) and not priced twice.
 */
export function costOf(usage: TokenUsage, pricing: Pricing | undefined): number {
  if (!pricing) return 0;
  const cached = Math.min(usage.cached, usage.input);
  const cachedPrice = pricing.cachedInputPerMTok ?? pricing.inputPerMTok;
  return (
    ((usage.input - cached) * pricing.inputPerMTok +
      cached * cachedPrice +
      usage.output * pricing.outputPerMTok) /
    1_000_000
  );
}

/** Tokens counted against `tokenBudget`: everything sent and received. */
export function tokensUsed(usage: TokenUsage): number {
  return usage.input + usage.output;
}

/** The estimate used when a provider reports no usage: about four characters per token. */
export function estimateTokensOfText(characters: number): number {
  return Math.ceil(characters / 4);
}

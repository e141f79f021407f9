// The image part of a provider's check (decision 0051): one more small call sending a 16×16 PNG as
// an `image_url` part. A model that answers takes images; one whose provider refuses the request
// (4xx) does not. A timeout or a network failure says nothing either way.
import { imageDataUrl } from "@gadget/protocol";
import type { ChatModel, ChatRequest } from "./chat-model.ts";
import { callModel } from "./model-call.ts";
import { ProviderError } from "./provider-error.ts";
import { clip } from "./text.ts";
import type { EngineLogger } from "./turn-input.ts";

/** A 16×16 red PNG: small enough for any provider's minimum, valid for every decoder. */
export const probeImage = {
  mediaType: "image/png" as const,
  data: "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR42mP4z8BAEmIY1TCqYfhqAACQ+f8B8u7oVwAAAABJRU5ErkJggg==",
};

/** The words the probe's question starts with: a scripted provider in tests can recognise it. */
export const imageProbeQuestion = "What colour is this image?";

const silentLogger: EngineLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * Whether the model takes an image part: `{images: true}` when it answered, `{images: false,
 * message}` when the provider refused the request, `{}` when no answer said either.
 */
export async function probeImages(
  model: ChatModel,
  base: Omit<ChatRequest, "messages" | "tools">,
  signal: AbortSignal,
): Promise<{ images?: boolean; imagesMessage?: string }> {
  const request: ChatRequest = {
    ...base,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: `${imageProbeQuestion} Answer in one word.` },
          { type: "image_url", image_url: { url: imageDataUrl(probeImage) } },
        ],
      },
    ],
  };
  const calls = callModel(request, {
    model,
    signal,
    retry: { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, maxRetryAfterMs: 0 },
    logger: silentLogger,
    emitText: false,
    callIdPrefix: "probe-image",
    quirks: new Set(base.quirks ?? []),
  });
  try {
    let step = await calls.next();
    while (!step.done) step = await calls.next();
    return { images: true };
  } catch (error) {
    if (
      error instanceof ProviderError &&
      error.httpStatus !== undefined &&
      error.httpStatus >= 400 &&
      error.httpStatus < 500 &&
      error.httpStatus !== 408 &&
      error.httpStatus !== 429
    )
      return { images: false, imagesMessage: clip(error.message, 300) };
    return {};
  }
}

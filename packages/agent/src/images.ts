// Images in the model's messages (decision 0051): the prompt's images as image parts of the first
// user message, and images a tool returned as one user message after the tool messages of their
// response (Chat Completions' tool messages take text only). Tool images live beside their
// message, never in it, so checkpoints and stored turns stay small: a resumed turn has the text.
import { type ImageData, type ITurnMessage, imageDataUrl } from "@gadget/protocol";
import type { ChatMessageParam } from "./chat-model.ts";

type ContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } };

/** Images a tool result carries, by its tool message (a pruned output is a new message: none). */
const toolImages = new WeakMap<ITurnMessage, ImageData[]>();

/** Keeps `images` beside the tool message `message` for the model calls of this turn. */
export function attachToolImages(message: ITurnMessage, images: readonly ImageData[]): void {
  if (images.length > 0) toolImages.set(message, [...images]);
}

/** A user message's content with its images after the text. */
export function withImageParts(text: string, images: readonly ImageData[]): ContentPart[] {
  return [
    { type: "text", text },
    ...images.map(
      (image): ContentPart => ({ type: "image_url", image_url: { url: imageDataUrl(image) } }),
    ),
  ];
}

/**
 * The user message showing the images of the tool messages `run` (consecutive tool results of
 * one response), or null when they carry none.
 */
export function toolImagesMessage(run: readonly ITurnMessage[]): ChatMessageParam | null {
  const shown: ImageData[] = [];
  const names: string[] = [];
  for (const message of run) {
    const images = toolImages.get(message);
    if (!images) continue;
    shown.push(...images);
    names.push(`${message.name ?? "a tool"} (${message.toolCallId ?? "?"})`);
  }
  if (shown.length === 0) return null;
  const text = `The image${shown.length === 1 ? "" : "s"} returned by ${names.join(", ")}, as the tool result${names.length === 1 ? "" : "s"} above said:`;
  return { role: "user", content: withImageParts(text, shown) };
}

/** Characters an image part counts as in prompt estimates (about 800 tokens). */
export const imageEstimateCharacters = 3_200;

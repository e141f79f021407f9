// Images in prompts (decision 0051): the types a prompt may carry, the caps, and the check of an
// image's bytes against the type it claims. Used at the REST edge, in the work order and by tools.
import { z } from "zod";
import { UserError } from "./errors.ts";

/** What the model providers of the anchors all take as image parts. */
export const imageMediaTypes = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;
export type ImageMediaType = (typeof imageMediaTypes)[number];
export const imageMediaTypeSchema = z.enum(imageMediaTypes);

/**
 * At most this many images in one prompt. With `maxImageBytes` a prompt's images fit in one
 * request body, one work order over the drones' socket (16 MiB) and, one image a document, far
 * below a MongoDB document's 16 MiB.
 */
export const maxPromptImages = 4;
/** One image's decoded size at most: 2 MiB. */
export const maxImageBytes = 2 * 1024 * 1024;
/** Base64 characters of an image of `maxImageBytes`. */
export const maxImageBase64Length = Math.ceil(maxImageBytes / 3) * 4;

/** An image as it travels: its type and its bytes in base64 (no `data:` prefix). */
export const imageDataSchema = z.object({
  mediaType: imageMediaTypeSchema,
  data: z
    .string()
    .min(1)
    .max(maxImageBase64Length)
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, "must be base64"),
});
export type ImageData = z.infer<typeof imageDataSchema>;

/**
 * An image of `POST /api/sessions/:id/turns` as sent: loosely typed on purpose, so the route can
 * answer a precise code (413, 415) instead of a generic validation failure.
 */
export const promptImageInputSchema = z.object({
  mediaType: z.string().max(100),
  /** Base64, or a `data:<type>;base64,` URL as a browser's FileReader makes it. */
  data: z.string().min(1),
  /** The file's name, shown beside the thumbnail. */
  name: z.string().trim().max(200).optional(),
});
export type PromptImageInput = z.infer<typeof promptImageInputSchema>;

/** A prompt image as a turn returns it: no bytes (`GET /api/turns/:id/images/:imageId` has them). */
export const turnImageSchema = z.object({
  _id: z.string(),
  mediaType: imageMediaTypeSchema,
  name: z.string().nullable(),
  size: z.number().int().nonnegative(),
});
export type TurnImage = z.infer<typeof turnImageSchema>;

/** The image type of `bytes` from their first bytes, or null when they are none of ours. */
export function sniffImageType(bytes: Uint8Array): ImageMediaType | null {
  const starts = (...signature: number[]) => signature.every((byte, at) => bytes[at] === byte);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  // RIFF....WEBP
  if (
    starts(0x52, 0x49, 0x46, 0x46) &&
    bytes.length >= 12 &&
    String.fromCharCode(...bytes.subarray(8, 12)) === "WEBP"
  )
    return "image/webp";
  return null;
}

/** A checked prompt image: its type as its bytes say, and the bytes. */
export interface CheckedImage {
  mediaType: ImageMediaType;
  name: string | null;
  bytes: Uint8Array;
}

const dataUrl = /^data:([^;,]+)(?:;[^,]*)?;base64,/;

/**
 * Checks a prompt's images: at most `maxPromptImages` (400 `too_many_images`), each a type of
 * ours (415 `image_type_not_supported`) whose bytes are that type, not merely named so, and at
 * most `maxImageBytes` (413 `image_too_large`).
 * @example const images = checkPromptImages(body.images ?? []);
 */
export function checkPromptImages(images: readonly PromptImageInput[]): CheckedImage[] {
  if (images.length > maxPromptImages)
    throw new UserError(
      "too_many_images",
      `A prompt takes at most ${maxPromptImages} images; this one has ${images.length}`,
      { details: { limit: maxPromptImages, count: images.length } },
    );
  return images.map((image, index) => {
    const label = image.name ? `"${image.name}"` : `image ${index + 1}`;
    const prefix = dataUrl.exec(image.data);
    const claimed = (prefix?.[1] ?? image.mediaType).toLowerCase();
    if (!(imageMediaTypes as readonly string[]).includes(claimed))
      throw new UserError(
        "image_type_not_supported",
        `${label} is ${claimed || "of no type"}; images must be PNG, JPEG, GIF or WebP`,
        { details: { index, mediaType: claimed, accepted: imageMediaTypes } },
      );
    const base64 = prefix ? image.data.slice(prefix[0].length) : image.data;
    // Decoded length from the base64 length, before decoding anything large.
    if (Math.floor((base64.length * 3) / 4) > maxImageBytes + 2)
      throw tooLarge(label, index, Math.floor((base64.length * 3) / 4));
    let bytes: Uint8Array | null = null;
    try {
      if (/^[A-Za-z0-9+/\r\n]*={0,2}$/.test(base64)) bytes = decodeBase64(base64);
    } catch {
      bytes = null;
    }
    if (!bytes)
      throw new UserError("validation_failed", `${label} is not base64`, {
        details: [{ path: `images.${index}.data`, message: "must be base64" }],
      });
    if (bytes.length > maxImageBytes) throw tooLarge(label, index, bytes.length);
    const actual = sniffImageType(bytes);
    if (actual !== claimed)
      throw new UserError(
        "image_type_not_supported",
        actual
          ? `${label} says ${claimed} but its bytes are ${actual}`
          : `${label} says ${claimed} but its bytes are not an image of that type`,
        { details: { index, mediaType: claimed, actual } },
      );
    return { mediaType: actual, name: image.name ?? null, bytes };
  });
}

function tooLarge(label: string, index: number, size: number): UserError {
  return new UserError(
    "image_too_large",
    `${label} is ${formatBytes(size)}; an image may be at most ${formatBytes(maxImageBytes)}`,
    { details: { index, size, limit: maxImageBytes } },
  );
}

/** "1.5 MiB", "12 KiB", "800 B". */
export function formatBytes(size: number): string {
  if (size >= 1024 * 1024) return `${(size / (1024 * 1024)).toFixed(1)} MiB`;
  if (size >= 1024) return `${Math.round(size / 1024)} KiB`;
  return `${size} B`;
}

/** Decodes base64 in Node and browsers alike (this package has no runtime dependencies). */
export function decodeBase64(base64: string): Uint8Array {
  const binary = atob(base64.replace(/[\r\n]/g, ""));
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index += 1) bytes[index] = binary.charCodeAt(index);
  return bytes;
}

/** The `data:` URL of an image, as Chat Completions' `image_url` parts take it. */
export function imageDataUrl(image: ImageData): string {
  return `data:${image.mediaType};base64,${image.data}`;
}

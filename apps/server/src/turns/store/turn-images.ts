// A prompt's images (decision 0051): checked at the REST edge (count, type by their bytes, size),
// refused before the turn starts when the provider's model does not take images, stored one
// document an image, and read back for the work order.
import type { Models, ProviderDocument, TurnImageRef } from "@gadget/db";
import {
  type CheckedImage,
  checkPromptImages,
  type ImageData,
  type PromptImageInput,
  UserError,
} from "@gadget/protocol";
import { Types } from "mongoose";

/** Whether the provider's last check found its current model takes images. */
export function providerTakesImages(provider: ProviderDocument): boolean {
  const known = provider.images;
  return Boolean(known?.accepted && known.modelId === provider.modelId);
}

/**
 * The prompt's images, checked; throws 400/413/415 for what is wrong with them and 422
 * `images_not_supported` when the provider's model does not take them (or was never checked).
 */
export function checkTurnImages(
  provider: ProviderDocument,
  images: readonly PromptImageInput[] | undefined,
): CheckedImage[] {
  const checked = checkPromptImages(images ?? []);
  if (checked.length === 0 || providerTakesImages(provider)) return checked;
  const known = provider.images;
  const unchecked = !known || known.modelId !== provider.modelId;
  throw new UserError(
    "images_not_supported",
    unchecked
      ? `Provider "${provider.name}" has not been checked for images with model ${provider.modelId}; check it on the Providers page to learn whether the model takes images, or send the prompt without them`
      : `Model ${provider.modelId} of provider "${provider.name}" does not take images${known.message ? ` (${known.message})` : ""}; send the prompt without them or choose a provider whose model takes images`,
    { details: { provider: String(provider._id), modelId: provider.modelId, checked: !unchecked } },
  );
}

/** Refs of checked images, with the ids their documents will have. */
export function imageRefs(images: readonly CheckedImage[]): TurnImageRef[] {
  return images.map((image) => ({
    _id: new Types.ObjectId(),
    mediaType: image.mediaType,
    name: image.name,
    size: image.bytes.length,
  }));
}

/** Stores a turn's images (before the turn itself, so dispatch always finds them). */
export async function storeTurnImages(
  models: Models,
  turn: { _id: Types.ObjectId; user: Types.ObjectId },
  refs: readonly TurnImageRef[],
  images: readonly CheckedImage[],
): Promise<void> {
  if (refs.length === 0) return;
  await models.TurnImage.insertMany(
    refs.map((ref, index) => {
      const bytes = (images[index] as CheckedImage).bytes;
      return {
        ...ref,
        turn: turn._id,
        user: turn.user,
        bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        createdAt: new Date(),
      };
    }),
  );
}

/** A turn's images as its work order carries them, in the order they were sent. */
export async function loadTurnImages(
  models: Models,
  refs: readonly TurnImageRef[] | undefined,
): Promise<ImageData[]> {
  if (!refs?.length) return [];
  const found = await models.TurnImage.find({ _id: { $in: refs.map((ref) => ref._id) } }).lean();
  const byId = new Map(found.map((image) => [String(image._id), image]));
  return refs.flatMap((ref) => {
    const image = byId.get(String(ref._id));
    if (!image) return [];
    return [{ mediaType: image.mediaType, data: bytesOf(image.bytes).toString("base64") }];
  });
}

/** A stored image's bytes: a Buffer, or the BSON Binary a lean read gives. */
export function bytesOf(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  const binary = value as { buffer: Uint8Array; position?: number };
  const length = binary.position ?? binary.buffer.byteLength;
  return Buffer.from(binary.buffer.buffer, binary.buffer.byteOffset, length);
}

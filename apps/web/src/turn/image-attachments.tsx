// Images pasted or dropped into the composer (decision 0051): checked here for type, size and
// count so the user hears at once what the server would refuse (it checks again, by the bytes),
// shown as thumbnails with a Remove button, and sent with the prompt as data URLs.
import {
  formatBytes,
  imageMediaTypes,
  maxImageBytes,
  maxPromptImages,
  type PromptImageInput,
} from "@gadget/protocol";
import { type ClipboardEvent, type DragEvent, useState } from "react";
import { dataUrlOf } from "../lib/data-url.ts";

export interface AttachedImage {
  id: number;
  name: string;
  mediaType: string;
  size: number;
  /** `data:<type>;base64,…`: the thumbnail's source and what is sent. */
  dataUrl: string;
}

let nextId = 1;

/** The composer's attached images, and the handlers that add them. */
export function useImageAttachments() {
  const [images, setImages] = useState<AttachedImage[]>([]);
  const [problem, setProblem] = useState<string | null>(null);

  const add = async (files: File[]) => {
    const pictures = files.filter((file) => file.type.startsWith("image/"));
    if (pictures.length === 0) return false;
    const problems: string[] = [];
    const added: AttachedImage[] = [];
    for (const file of pictures) {
      const name = file.name || "pasted image";
      if (!(imageMediaTypes as readonly string[]).includes(file.type)) {
        problems.push(`${name} is ${file.type}; images must be PNG, JPEG, GIF or WebP.`);
      } else if (file.size > maxImageBytes) {
        problems.push(
          `${name} is ${formatBytes(file.size)}; an image may be at most ${formatBytes(maxImageBytes)}.`,
        );
      } else {
        added.push({
          id: nextId++,
          name,
          mediaType: file.type,
          size: file.size,
          dataUrl: await dataUrlOf(file),
        });
      }
    }
    setImages((current) => {
      const room = maxPromptImages - current.length;
      if (added.length > room) problems.push(`A prompt takes at most ${maxPromptImages} images.`);
      return [...current, ...added.slice(0, Math.max(0, room))];
    });
    setProblem(problems.length > 0 ? problems.join(" ") : null);
    return true;
  };

  return {
    images,
    problem,
    remove: (id: number) => setImages((current) => current.filter((image) => image.id !== id)),
    clear: () => {
      setImages([]);
      setProblem(null);
    },
    /** Pasted images are attached; pasted text goes into the box as usual. */
    onPaste: (event: ClipboardEvent) => {
      const files = Array.from(event.clipboardData?.files ?? []);
      if (files.some((file) => file.type.startsWith("image/"))) {
        event.preventDefault();
        void add(files);
      }
    },
    onDragOver: (event: DragEvent) => {
      if (Array.from(event.dataTransfer?.types ?? []).includes("Files")) event.preventDefault();
    },
    onDrop: (event: DragEvent) => {
      const files = Array.from(event.dataTransfer?.files ?? []);
      if (files.length === 0) return;
      event.preventDefault();
      void add(files);
    },
  };
}

/** The images as the new-turn body takes them. */
export function promptImages(images: readonly AttachedImage[]): PromptImageInput[] {
  return images.map((image) => ({
    mediaType: image.mediaType,
    data: image.dataUrl,
    name: image.name,
  }));
}

/** Thumbnails of the attached images, each with a Remove button. */
export function AttachedImages({
  images,
  onRemove,
}: {
  images: readonly AttachedImage[];
  onRemove: (id: number) => void;
}) {
  if (images.length === 0) return null;
  return (
    <ul className="composer-images" aria-label="Attached images">
      {images.map((image) => (
        <li key={image.id}>
          <img src={image.dataUrl} alt={image.name} width={64} height={64} />
          <span className="small muted">
            {image.name} · {formatBytes(image.size)}
          </span>
          <button
            type="button"
            className="button small"
            onClick={() => onRemove(image.id)}
            aria-label={`Remove ${image.name}`}
          >
            Remove
          </button>
        </li>
      ))}
    </ul>
  );
}

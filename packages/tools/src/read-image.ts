// read_file of an image (decision 0051): the picture itself for a model that takes images, and
// for one that does not a note saying what the file is, so it does not read bytes as text.
import type { ToolContext, ToolResult } from "@gadget/agent";
import { ToolError } from "@gadget/agent";
import { type ImageMediaType, maxImageBytes, sniffImageType } from "@gadget/protocol";
import { openRegularForRead } from "./regular-file.ts";
import { formatBytes } from "./text.ts";
import type { WorkspacePath } from "./workspace-path.ts";

const kindOf: Record<ImageMediaType, string> = {
  "image/png": "PNG",
  "image/jpeg": "JPEG",
  "image/gif": "GIF",
  "image/webp": "WebP",
};

/** The image type of a file whose first bytes are `head`, or null when it is not one. */
export function imageTypeOf(head: Uint8Array): ImageMediaType | null {
  return sniffImageType(head);
}

/** read_file's answer for an image file of `size` bytes. */
export async function readImage(
  target: Pick<WorkspacePath, "absolute" | "root" | "relative">,
  mediaType: ImageMediaType,
  size: number,
  context: Pick<ToolContext, "acceptsImages" | "signal">,
): Promise<ToolResult> {
  const what = `${target.relative} is a ${kindOf[mediaType]} image (${formatBytes(size)})`;
  const summary = `Read ${target.relative} (${kindOf[mediaType]} image, ${formatBytes(size)})`;
  const data = { path: target.relative, image: { mediaType, size } };
  if (!context.acceptsImages)
    return {
      ok: true,
      output: `${what}. The model of this turn does not take images, so read_file cannot show it; judge it by its name and where it is used, or inspect it with run_command (\`file ${target.relative}\`).`,
      summary,
      data,
    };
  if (size > maxImageBytes)
    throw new ToolError(
      "too_large",
      `${what}; read_file shows images of at most ${formatBytes(maxImageBytes)}.`,
    );
  const handle = await openRegularForRead(target.absolute, target);
  let bytes: Buffer;
  try {
    context.signal.throwIfAborted();
    bytes = await handle.readFile();
  } finally {
    await handle.close();
  }
  // The file may have changed since it was looked at: what is sent is what was read.
  if (bytes.length > maxImageBytes || sniffImageType(bytes) !== mediaType)
    throw new ToolError("refused", `${target.relative} changed while it was read; read it again.`);
  return {
    ok: true,
    output: `${what}, shown to you as an image after the tool results.`,
    summary,
    data,
    images: [{ mediaType, data: bytes.toString("base64") }],
  };
}

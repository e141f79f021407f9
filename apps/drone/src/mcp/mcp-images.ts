// An MCP tool result's images for a model that takes them (decision 0051): each `image` item of a
// type of ours whose bytes are that type, within the size cap. The text keeps its `[image: …]`
// line either way, so a model without images still learns one came back.
import type { ToolContext, ToolResult } from "@gadget/agent";
import {
  decodeBase64,
  type ImageData,
  imageDataSchema,
  maxPromptImages,
  sniffImageType,
} from "@gadget/protocol";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

/** `{images}` to spread into a tool result, or nothing. */
export function resultImages(
  result: CallToolResult,
  context: Pick<ToolContext, "acceptsImages">,
): Pick<ToolResult, "images"> {
  if (!context.acceptsImages) return {};
  const images: ImageData[] = [];
  for (const item of result.content ?? []) {
    if (item.type !== "image" || images.length >= maxPromptImages) continue;
    const parsed = imageDataSchema.safeParse({ mediaType: item.mimeType, data: item.data });
    if (!parsed.success) continue;
    // A server is untrusted: what it calls a PNG must be one.
    let actual: string | null = null;
    try {
      actual = sniffImageType(decodeBase64(parsed.data.data));
    } catch {
      actual = null;
    }
    if (actual === parsed.data.mediaType) images.push(parsed.data);
  }
  return images.length > 0 ? { images } : {};
}

// A prompt's images as the REST edge checks them: the type their bytes say, not their name; the
// caps; the answers' codes and statuses.
import { describe, expect, it } from "vitest";
import { GadgetError } from "./errors.ts";
import { checkPromptImages, maxImageBytes, sniffImageType } from "./images.ts";

const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR42mP4z8BAEmIY1TCqYfhqAACQ+f8B8u7oVwAAAABJRU5ErkJggg==",
  "base64",
);
const webp = Buffer.concat([Buffer.from("RIFF"), Buffer.alloc(4), Buffer.from("WEBPVP8 ")]);

function refusal(images: Parameters<typeof checkPromptImages>[0]) {
  try {
    checkPromptImages(images);
  } catch (error) {
    if (error instanceof GadgetError) return { code: error.code, status: error.status };
    throw error;
  }
  throw new Error("accepted");
}

describe("prompt images", () => {
  it("knows PNG, JPEG, GIF and WebP by their first bytes, and nothing else", () => {
    expect(sniffImageType(png)).toBe("image/png");
    expect(sniffImageType(Buffer.from([0xff, 0xd8, 0xff, 0xdb]))).toBe("image/jpeg");
    expect(sniffImageType(Buffer.from("GIF89a"))).toBe("image/gif");
    expect(sniffImageType(webp)).toBe("image/webp");
    expect(sniffImageType(Buffer.from("RIFF\0\0\0\0WAVEfmt "))).toBeNull();
    expect(sniffImageType(Buffer.from("<svg/>"))).toBeNull();
    expect(sniffImageType(new Uint8Array())).toBeNull();
  });

  it("takes base64 or a browser's data: URL, line breaks included, and keeps the name", () => {
    const base64 = png.toString("base64");
    const [plain, url, wrapped] = checkPromptImages([
      { mediaType: "image/png", data: base64, name: "red.png" },
      { mediaType: "", data: `data:image/png;base64,${base64}` },
      { mediaType: "IMAGE/PNG", data: `${base64.slice(0, 40)}\r\n${base64.slice(40)}` },
    ]);
    for (const image of [plain, url, wrapped]) {
      expect(image?.mediaType).toBe("image/png");
      expect(Buffer.from(image?.bytes ?? []).equals(png)).toBe(true);
    }
    expect(plain?.name).toBe("red.png");
    expect(url?.name).toBeNull();
  });

  it("answers each problem with its own code and status", () => {
    const image = (bytes: Buffer, mediaType = "image/png") => ({
      mediaType,
      data: bytes.toString("base64"),
    });
    expect(refusal(Array.from({ length: 5 }, () => image(png)))).toEqual({
      code: "too_many_images",
      status: 400,
    });
    expect(refusal([image(Buffer.concat([png, Buffer.alloc(maxImageBytes)]))])).toEqual({
      code: "image_too_large",
      status: 413,
    });
    expect(refusal([image(Buffer.from("<svg/>"), "image/svg+xml")])).toEqual({
      code: "image_type_not_supported",
      status: 415,
    });
    expect(refusal([image(Buffer.from("<html>"))])).toEqual({
      code: "image_type_not_supported",
      status: 415,
    });
    expect(refusal([image(png, "image/jpeg")])).toEqual({
      code: "image_type_not_supported",
      status: 415,
    });
    expect(refusal([{ mediaType: "image/png", data: "not base64!" }])).toEqual({
      code: "validation_failed",
      status: 400,
    });
  });
});

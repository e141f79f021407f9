// A file or an answer's body as a `data:` URL: the one image source besides its own origin that
// the IDE's Content-Security-Policy allows.

/** Reads `blob` as `data:<type>;base64,…`. */
export function dataUrlOf(blob: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"));
    reader.readAsDataURL(blob);
  });
}

// The recorded rejections of __fixtures__/rejections/ as scripted errors (sources in its index.json).
import { readFileSync } from "node:fs";
import type { ScriptedError } from "@gadget/testkit";

/** A recorded answer by its file name in __fixtures__/rejections/, ready for `{ error }`. */
export function recordedRejection(file: string): ScriptedError {
  const recorded = JSON.parse(
    readFileSync(new URL(`./rejections/${file}`, import.meta.url), "utf8"),
  ) as { status: number; body: unknown };
  return { status: recorded.status, body: recorded.body };
}

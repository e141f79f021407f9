#!/usr/bin/env node
// Entry point of the `gadget-drone` command. Published, this file sits in bin/ beside main.js.
// In the repository it runs the TypeScript source through tsx, so a stale dist/ never runs.
import { existsSync } from "node:fs";

const published = new URL("../main.js", import.meta.url);
const source = new URL("../src/main.ts", import.meta.url);
if (existsSync(published)) {
  await import(published.href);
} else if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
} else {
  await import(new URL("../dist/main.js", import.meta.url).href);
}

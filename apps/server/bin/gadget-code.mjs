#!/usr/bin/env node
// The gadget-code command: runs the TypeScript CLI through tsx.
import { register } from "tsx/esm/api";

register();
await import("../src/cli.ts");

// The web IDE's package directory, which its browser tests and benchmarks build with Vite.
import path from "node:path";
import { fileURLToPath } from "node:url";

export const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

// `pnpm start`: the whole stack on this machine. Until the server, drone and web IDE land,
// it says plainly what is not built yet instead of pretending.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const parts = [
  ["server", "apps/server/src/main.ts"],
  ["drone", "apps/drone/src/main.ts"],
  ["web IDE", "apps/web/src/main.tsx"],
];
const missing = parts
  .filter(([, file]) => !existsSync(path.join(root, file)))
  .map(([name]) => name);
console.error(
  `pnpm start: not yet built (${missing.length ? `missing: ${missing.join(", ")}` : "the launcher itself"}).`,
);
console.error(
  "For now: `pnpm services:up` starts private MongoDB-compatible and Redis servers for development.",
);
process.exit(1);

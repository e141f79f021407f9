// Where the apps under test are: this package runs their real commands and builds them, through
// the links pnpm makes for its dependencies (gadget-drone, @gadget/web).
import { realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const e2eDir = path.dirname(fileURLToPath(import.meta.url));
const linked = path.join(e2eDir, "node_modules");

/** The repository's root (test artifacts go under it). */
export const repoDir = path.resolve(e2eDir, "../..");
/** The directory holding the `gadget-drone` command as pnpm links it here. */
export const binDir = path.join(linked, ".bin");
/** The gadget-drone CLI's entry, run with `node` as the npm package's bin is. */
export const droneBin = path.join(
  realpathSync(path.join(linked, "gadget-drone")),
  "bin",
  "gadget-drone.js",
);
/** The web IDE's package directory (its Vite config and sources). */
export const webDir = realpathSync(path.join(linked, "@gadget", "web"));

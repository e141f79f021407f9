// The server's own drone package: built from the checkout when missing, reused while no source
// changed, built again after one did.
import { statSync, utimesSync } from "node:fs";
import path from "node:path";
import { RELEASE_VERSION } from "@gadget/protocol";
import { findRepoRoot } from "@gadget/services";
import { makeTempDir } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { ensureDronePackage } from "./build-drone-package.ts";
import { readDronePackage } from "./drone-package.ts";

describe("ensureDronePackage", () => {
  it("builds the package once, reuses it, and builds it again when it is older than the sources", async () => {
    const cacheDir = await makeTempDir("drone-package-cache-");
    const lines: string[] = [];
    const options = { rootDir: findRepoRoot(), cacheDir, log: (line: string) => lines.push(line) };
    const built = await ensureDronePackage(options);
    expect(built).toBe(path.join(cacheDir, `gadget-drone-${RELEASE_VERSION}.tgz`));
    expect(lines).toEqual([`building the drone package ${RELEASE_VERSION} for /install.sh…`]);
    expect((await readDronePackage(built!)).version).toBe(RELEASE_VERSION);

    const firstBuild = statSync(built!).mtimeMs;
    expect(await ensureDronePackage(options)).toBe(built);
    expect(lines).toHaveLength(1);
    expect(statSync(built!).mtimeMs).toBe(firstBuild);

    // Older than the drone's sources (as after an edit): built again.
    utimesSync(built!, new Date(2001, 0, 1), new Date(2001, 0, 1));
    expect(await ensureDronePackage(options)).toBe(built);
    expect(lines).toHaveLength(2);
  }, 60_000);

  it("finds nothing to build outside a checkout", async () => {
    const elsewhere = await makeTempDir("not-a-checkout-");
    expect(
      await ensureDronePackage({ rootDir: elsewhere, cacheDir: elsewhere, log: () => {} }),
    ).toBeNull();
  });
});

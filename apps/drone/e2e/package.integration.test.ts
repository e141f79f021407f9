// The `gadget-drone` package: one self-contained bundle that runs unpacked, with no node_modules.
import { execFileSync } from "node:child_process";
import { cpSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { makeTempDirSync } from "@gadget/testkit";
import { describe, expect, it } from "vitest";

const droneRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

describe("the gadget-drone package", () => {
  it("builds a bundle that needs no dependency, and runs as the gadget-drone command", () => {
    const dist = makeTempDirSync("gadget-drone-build-");
    execFileSync(process.execPath, [path.join(droneRoot, "scripts", "build.mjs"), dist], {
      stdio: "pipe",
    });
    const bundle = readFileSync(path.join(dist, "main.js"), "utf8");
    const published = JSON.parse(readFileSync(path.join(dist, "package.json"), "utf8"));
    expect(published).toMatchObject({
      name: "gadget-drone",
      bin: { "gadget-drone": "./bin/gadget-drone.js" },
    });
    expect(published.dependencies).toBeUndefined();

    // Nothing is imported but node's own modules (and ws's optional native helpers, guarded).
    const imports = new Set(
      [...bundle.matchAll(/from "([^".][^"]*)"/g)]
        .map((match) => match[1] as string)
        .filter((name) => !name.startsWith("node:") && !builtinModules.includes(name)),
    );
    expect([...imports].filter((name) => !["bufferutil", "utf-8-validate"].includes(name))).toEqual(
      [],
    );

    // Unpacked on its own, away from the workspace's node_modules.
    const installed = makeTempDirSync("gadget-drone-package-");
    cpSync(dist, installed, { recursive: true });
    const bin = path.join(installed, "bin", "gadget-drone.js");
    expect(execFileSync(bin, ["--version"]).toString().trim()).toBe(published.version);
    const help = execFileSync(bin, ["--help"]).toString();
    for (const command of ["register", "start", "status", "unregister", "service", "update"])
      expect(help).toContain(command);
  });
});

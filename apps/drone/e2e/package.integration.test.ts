// The `gadget-drone` npm package: the build bundles our workspace packages and runs on its own.
import { execFileSync } from "node:child_process";
import { cpSync, readFileSync, symlinkSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { makeTempDirSync } from "@gadget/testkit";
import { describe, expect, it } from "vitest";

const droneRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

describe("the gadget-drone npm package", () => {
  it("builds a bundle that needs only its declared dependencies, and runs as the gadget-drone command", () => {
    execFileSync(process.execPath, [path.join(droneRoot, "scripts", "build.mjs")], {
      stdio: "pipe",
    });
    const dist = path.join(droneRoot, "dist");
    const bundle = readFileSync(path.join(dist, "main.js"), "utf8");
    const published = JSON.parse(readFileSync(path.join(dist, "package.json"), "utf8"));
    expect(published).toMatchObject({
      name: "gadget-drone",
      bin: { "gadget-drone": "./bin/gadget-drone.js" },
    });

    // Every bare import left in the bundle is a declared dependency; none is one of ours.
    const imports = new Set(
      [...bundle.matchAll(/from "([^".][^"]*)"/g)]
        .map((match) => match[1] as string)
        .filter((name) => !name.startsWith("node:")),
    );
    expect([...imports].filter((name) => name.startsWith("@gadget/"))).toEqual([]);
    // A package's name: its first path segment, or two for a scoped one (@scope/name).
    const packageName = (name: string) =>
      name
        .split("/")
        .slice(0, name.startsWith("@") ? 2 : 1)
        .join("/");
    for (const name of imports)
      expect(Object.keys(published.dependencies)).toContain(packageName(name));

    // Installed on its own: the package folder plus its dependencies, nothing of the workspace.
    const installed = makeTempDirSync("gadget-drone-package-");
    cpSync(dist, installed, { recursive: true });
    symlinkSync(path.join(droneRoot, "node_modules"), path.join(installed, "node_modules"));
    const bin = path.join(installed, "bin", "gadget-drone.js");
    expect(execFileSync(bin, ["--version"]).toString().trim()).toBe(published.version);
    const help = execFileSync(bin, ["--help"]).toString();
    for (const command of ["register", "start", "status", "unregister"])
      expect(help).toContain(command);
  });
});

// The installed layout: which installation a command belongs to, switching `current` and back.
import { mkdirSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeTempDir } from "@gadget/testkit";
import { describe, expect, it } from "vitest";
import { stableCommand } from "../commands/service.ts";
import { currentVersion, findInstallation, rollBack, switchTo } from "./installation.ts";

async function installed(...versions: string[]) {
  const prefix = await makeTempDir("prefix-");
  const library = path.join(prefix, "lib/gadget-drone");
  for (const version of versions) {
    mkdirSync(path.join(library, "versions", version, "bin"), { recursive: true });
    writeFileSync(path.join(library, "versions", version, "bin/gadget-drone.js"), "");
  }
  symlinkSync(`versions/${versions[0]}`, path.join(library, "current"));
  mkdirSync(path.join(prefix, "bin"));
  symlinkSync(
    "../lib/gadget-drone/current/bin/gadget-drone.js",
    path.join(prefix, "bin/gadget-drone"),
  );
  return { prefix, library };
}

describe("an installation", () => {
  it("is found through the command's links, with the version that runs", async () => {
    const { prefix, library } = await installed("0.1.0");
    expect(findInstallation(path.join(prefix, "bin/gadget-drone"))).toEqual({
      library,
      version: "0.1.0",
    });
    // A checkout's or npm's command is none.
    const elsewhere = path.join(await makeTempDir("checkout-"), "bin/gadget-drone.js");
    mkdirSync(path.dirname(elsewhere));
    writeFileSync(elsewhere, "");
    expect(findInstallation(elsewhere)).toBeNull();
    expect(findInstallation(path.join(prefix, "missing"))).toBeNull();
  });

  it("switches current and keeps the one before as previous, to roll back to", async () => {
    const { library } = await installed("0.1.0", "0.2.0");
    const installation = { library, version: "0.1.0" };
    await switchTo(installation, "0.2.0");
    expect(readlinkSync(path.join(library, "current"))).toBe("versions/0.2.0");
    expect(readlinkSync(path.join(library, "previous"))).toBe("versions/0.1.0");
    expect(await rollBack(installation)).toBe("0.1.0");
    expect(await currentVersion(installation)).toBe("0.1.0");
  });

  it("gives services the stable link, not one version's file", async () => {
    const { prefix, library } = await installed("0.1.0");
    expect(stableCommand(path.join(library, "versions/0.1.0/bin/gadget-drone.js"))).toBe(
      path.join(prefix, "bin/gadget-drone"),
    );
    expect(stableCommand("/usr/local/bin/gadget-drone")).toBe("/usr/local/bin/gadget-drone");
  });
});

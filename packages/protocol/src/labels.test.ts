// Labels and requirements: what a drone must have to run a turn.
import { describe, expect, it } from "vitest";
import { droneLabelsSchema, labelsMatch, mergeLabels, missingLabels } from "./labels.ts";
import { compareVersions } from "./version.ts";

describe("drone labels", () => {
  it("matches key=value exactly and a bare key with any value", () => {
    const labels = ["gpu=a100", "os=linux", "fast"];
    expect(labelsMatch(labels, [])).toBe(true);
    expect(labelsMatch(labels, ["gpu"])).toBe(true);
    expect(labelsMatch(labels, ["gpu=a100", "os=linux"])).toBe(true);
    expect(labelsMatch(labels, ["fast"])).toBe(true);
    expect(missingLabels(labels, ["gpu=h100", "os", "arch=arm64", "fast=yes"])).toEqual([
      "gpu=h100",
      "arch=arm64",
      "fast=yes",
    ]);
    // A key is a whole key, not a prefix of one.
    expect(labelsMatch(["gpus=2"], ["gpu"])).toBe(false);
  });

  it("keeps a drone's own os, arch and sandbox over a user's", () => {
    expect(
      mergeLabels(["gpu", "os=haiku", "region=eu"], ["os=linux", "arch=x64", "sandbox=none"]),
    ).toEqual(["gpu", "region=eu", "os=linux", "arch=x64", "sandbox=none"]);
  });

  it("accepts key or key=value, drops repeats, refuses the rest", () => {
    expect(droneLabelsSchema.parse(["gpu", "region=eu-west-1", "gpu"])).toEqual([
      "gpu",
      "region=eu-west-1",
    ]);
    for (const bad of ["", "=x", "Has Space", "UPPER", "key=has space", "k=".padEnd(200, "v")]) {
      expect(droneLabelsSchema.safeParse([bad]).success, bad).toBe(false);
    }
    expect(droneLabelsSchema.safeParse(Array.from({ length: 33 }, (_, i) => `l${i}`)).success).toBe(
      false,
    );
  });

  it("compares release versions numerically", () => {
    expect(compareVersions("0.1.0", "0.1.0")).toBe(0);
    expect(compareVersions("0.0.9", "0.1.0")).toBe(-1);
    expect(compareVersions("0.10.0", "0.9.9")).toBe(1);
    expect(compareVersions("1.0.0-beta.1", "1.0.0")).toBe(0);
  });
});

// Drone labels and the requirements turns and projects name: `key=value` or a bare `key`, as
// GitHub runners' labels and Buildkite agents' tags. A requirement `key=value` needs exactly that
// label; a bare `key` needs the key with any value (or the bare label).
import { z } from "zod";

/** `gpu`, `os=linux`, `region=eu-west-1`: a lower-case key, optionally `=` and a value. */
export const droneLabelSchema = z
  .string()
  .trim()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,62}(=[A-Za-z0-9._:/+-]{1,100})?$/,
    "must be key or key=value: a lower-case key of letters, digits, . _ -, and a value without spaces",
  );

/** A drone's labels or a turn's requirements: a short list without repeats. */
export const droneLabelsSchema = z
  .array(droneLabelSchema)
  .max(32)
  .transform((labels) => [...new Set(labels)]);

/** The labels a drone adds about itself (a user's labels may not use these keys). */
export const automaticLabelKeys = ["os", "arch", "sandbox"] as const;

/** The requirements `labels` lacks, in the order given; empty when the drone may run the turn. */
export function missingLabels(labels: readonly string[], requires: readonly string[]): string[] {
  return requires.filter((requirement) =>
    requirement.includes("=")
      ? !labels.includes(requirement)
      : !labels.some((label) => label === requirement || label.startsWith(`${requirement}=`)),
  );
}

/** Whether a drone with `labels` may run a turn requiring `requires`. */
export function labelsMatch(labels: readonly string[], requires: readonly string[]): boolean {
  return missingLabels(labels, requires).length === 0;
}

/** The user's labels without any that name an automatic key, followed by the automatic ones. */
export function mergeLabels(user: readonly string[], automatic: readonly string[]): string[] {
  const automaticKeys = new Set(automatic.map((label) => label.split("=")[0]));
  const kept = user.filter((label) => !automaticKeys.has(label.split("=")[0]));
  return [...new Set([...kept, ...automatic])];
}

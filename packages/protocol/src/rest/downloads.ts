// Downloads anyone may fetch without signing in: the drone package of this server's release, its
// metadata, and the install script that fetches and verifies it.
import { z } from "zod";
import { defineRoute } from "./route.ts";

/** `GET /downloads/gadget-drone.json`: which package this server hands out, and how to check it. */
export const dronePackageInfoSchema = z.object({
  version: z.string(),
  /** The wire protocol it speaks (the server's). */
  protocol: z.number().int(),
  /** Hex sha256 of the .tgz: the install script and `gadget-drone update` refuse anything else. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  size: z.number().int().nonnegative(),
  /** Where the .tgz is, under the server's public URL. */
  url: z.url(),
});
export type DronePackageInfo = z.infer<typeof dronePackageInfoSchema>;

/** `gadget-drone-<version>.tgz`; any other name is simply not found. */
export const dronePackageFileSchema = z.object({
  file: z
    .string()
    .regex(/^gadget-drone-[0-9][0-9A-Za-z.+-]{0,60}\.tgz$/, "Drone package not found"),
});

export const downloadRoutes = {
  dronePackageInfo: defineRoute({
    method: "GET",
    path: "/downloads/gadget-drone.json",
    caller: "anyone",
    answers: { 200: dronePackageInfoSchema },
  }),
  /** The package itself (application/gzip); 404 for another version than the one served. */
  dronePackage: defineRoute({
    method: "GET",
    path: "/downloads/:file",
    caller: "anyone",
    params: dronePackageFileSchema,
    /** The .tgz's bytes. */
    answers: { 200: z.unknown() },
  }),
  /** A POSIX sh script: `curl -fsSL <server>/install.sh | sh -s -- --token <token>`. */
  installScript: defineRoute({
    method: "GET",
    path: "/install.sh",
    caller: "anyone",
    answers: { 200: z.string() },
  }),
};

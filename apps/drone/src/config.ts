// The drone's config file: which server, its identity and where its workspaces live (mode 0600).
import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { objectIdSchema, parseOrThrow, UserError } from "@gadget/protocol";
import { z } from "zod";

export const droneConfigSchema = z.object({
  server: z.url(),
  droneId: objectIdSchema,
  credential: z.string().min(1),
  name: z.string().min(1),
  workspace: z.string().min(1),
  capacity: z.number().int().min(1).max(64),
  registeredAt: z.string(),
  /** The labels given at registration (`--label`); the web IDE's drones page may change them. */
  labels: z.array(z.string()).optional(),
  /** Days a session worktree may sit unused before it is removed (its branch stays); default 7. */
  worktreeRetentionDays: z.number().positive().optional(),
  /** Minutes a session's MCP servers keep running without a turn; default 10. */
  mcpIdleMinutes: z.number().positive().optional(),
  /** Seconds an MCP server may take to start and list its tools; default 10. */
  mcpTimeoutSeconds: z.number().positive().optional(),
  /** Sandbox settings a developer may add by hand. */
  sandbox: z
    .object({
      /** More directories commands may read (toolchains the sandbox does not find on PATH). */
      readOnlyPaths: z.array(z.string().startsWith("/")).default([]),
    })
    .optional(),
});
export type DroneConfig = z.infer<typeof droneConfigSchema>;

/** Reads and validates the config; a missing or broken file is a UserError that says what to do. */
export async function readConfig(file: string): Promise<DroneConfig> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw new UserError(
        "not_registered",
        `No drone config at ${file}: run \`gadget-drone register --server <url> --token <token>\` first`,
      );
    }
    throw error;
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new UserError("invalid_config", `${file} is not valid JSON; register again with --force`);
  }
  return parseOrThrow(droneConfigSchema, data, `drone config ${file}`);
}

/** Whether a config file exists and is readable (used to refuse overwriting another server's). */
export async function readConfigIfPresent(file: string): Promise<DroneConfig | null> {
  try {
    return await readConfig(file);
  } catch (error) {
    if (error instanceof UserError && error.code === "not_registered") return null;
    throw error;
  }
}

/** Writes the config atomically with mode 0600: it holds the drone's credential. */
export async function writeConfig(file: string, config: DroneConfig): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, file);
}

// An MCP server written with the official SDK, for tests: a read tool, a write tool, one that
// fails, one that answers an image, one that tells an env variable (and its hash), one that tries
// to read any path, one that exits, one whose name needs making safe, one that reports progress,
// one that only runs as a task; a resource. `--crash` exits at once; `--noisy-crash` exits after a stack trace
// and npm-like noise; `--hang` never answers. Bundled into one file (bundleMcpFixtureServer) so it runs inside a sandbox.
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

/** A 1×1 transparent PNG. */
const pixel =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The fixture's tools on `server` (also served over Streamable HTTP by startRemoteMcpServer). */
export function registerFixtureTools(server: McpServer, label: string): void {
  server.registerTool(
    "read_note",
    {
      description: "Reads a note of the tracker.",
      inputSchema: { id: z.string().describe("the note's id"), delay_ms: z.number().optional() },
      annotations: { readOnlyHint: true },
    },
    async ({ id, delay_ms }) => {
      const started = Date.now();
      if (delay_ms) await sleep(delay_ms);
      return {
        content: [{ type: "text", text: `note ${id} from ${label} (started ${started})` }],
      };
    },
  );
  server.registerTool(
    "create_issue",
    {
      description: "Opens an issue; writes issues/<title>.md in the session's worktree.",
      inputSchema: { title: z.string().min(1).max(100), body: z.string().optional() },
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
    async ({ title, body }) => {
      // The drone starts stdio servers in the project's default-branch checkout (read-only) and
      // names the session's worktree in GADGET_WORKTREE.
      const root = process.env.GADGET_WORKTREE ?? process.cwd();
      await mkdir(path.join(root, "issues"), { recursive: true });
      const file = path.join("issues", `${title.replace(/[^a-zA-Z0-9-]/g, "-")}.md`);
      await writeFile(path.join(root, file), `# ${title}\n\n${body ?? ""}\n`);
      return { content: [{ type: "text", text: `created ${file} in ${root}` }] };
    },
  );
  server.registerTool("fail", { description: "Always fails.", inputSchema: {} }, async () => ({
    isError: true,
    content: [{ type: "text", text: "the tracker refused: quota exceeded" }],
  }));
  server.registerTool(
    "screenshot",
    {
      description: "Takes a screenshot.",
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    async () => ({
      content: [
        { type: "text", text: "the screen:" },
        { type: "image", data: pixel, mimeType: "image/png" },
      ],
    }),
  );
  server.registerTool(
    "env_echo",
    {
      description: "Tells the value of one environment variable and its sha256.",
      inputSchema: { name: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ name }) => {
      const value = process.env[name];
      const hash = value === undefined ? "unset" : createHash("sha256").update(value).digest("hex");
      return { content: [{ type: "text", text: `${name}=${value ?? ""} sha256=${hash}` }] };
    },
  );
  server.registerTool(
    "read_path",
    {
      description: "Reads any file by absolute path.",
      inputSchema: { path: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ path: target }) => {
      try {
        return { content: [{ type: "text", text: await readFile(target, "utf8") }] };
      } catch (error) {
        return { isError: true, content: [{ type: "text", text: (error as Error).message }] };
      }
    },
  );
  server.registerTool(
    "crash",
    { description: "Answers, then exits (a server that dies mid-session).", inputSchema: {} },
    async () => {
      // Reads nothing more, so a call sent after this answer meets a dead server however the
      // machine schedules the exit; the reason goes out first so the drone can quote it.
      process.stderr.write("fixture exiting on request\n");
      process.stdin.pause();
      process.stdin.removeAllListeners("data");
      setTimeout(() => process.exit(1), 20);
      return { content: [{ type: "text", text: "exiting" }] };
    },
  );
  server.registerTool(
    "count_slowly",
    {
      description: "Counts to `to`, reporting progress at each step.",
      inputSchema: { to: z.number().int().min(1).max(20) },
      annotations: { readOnlyHint: true },
    },
    async ({ to }, extra) => {
      const progressToken = extra._meta?.progressToken;
      for (let step = 1; step <= to; step++) {
        if (step > 1) await sleep(10);
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken, progress: step, total: to, message: `counted ${step}` },
          });
        }
      }
      // The answer follows the last progress at once (often in the same read): the client must
      // still show that progress.
      return { content: [{ type: "text", text: `counted to ${to}` }] };
    },
  );
  server.registerResource(
    "release-notes",
    "notes://tracker/release",
    { description: "The tracker's release notes.", mimeType: "text/markdown" },
    async (uri) => ({
      contents: [
        { uri: uri.href, mimeType: "text/markdown", text: `# Release ${label}\nAll fixed.` },
      ],
    }),
  );
  // Runs only as a task (`execution.taskSupport: "required"`); a plain call is refused.
  server.experimental.tasks.registerToolTask(
    "research",
    { description: "A long research job run as a task.", inputSchema: {} },
    {
      createTask: async () => {
        throw new Error("tasks are not kept by the fixture");
      },
      getTask: async () => {
        throw new Error("tasks are not kept by the fixture");
      },
      getTaskResult: async () => {
        throw new Error("tasks are not kept by the fixture");
      },
    },
  );
  server.registerTool(
    "issues.search",
    {
      description: "Searches issues (a name with a dot).",
      inputSchema: { query: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ query }) => ({ content: [{ type: "text", text: `no issue matches ${query}` }] }),
  );
}

/** Runs the fixture on stdio: what `node fixture.mjs [--crash|--hang]` does. */
export async function runStdioFixture(argv: readonly string[]): Promise<void> {
  if (argv.includes("--crash")) {
    process.stderr.write("fixture crashed on purpose\n");
    process.exit(3);
  }
  if (argv.includes("--noisy-crash")) {
    process.stderr.write(
      [
        "npm error code EAI_AGAIN",
        `npm error request to https://registry.example/pkg failed, token ${process.env.FIXTURE_SECRET ?? "none"}`,
        "",
        "Error: getaddrinfo EAI_AGAIN registry.example",
        "    at GetAddrInfoReqWrap.onlookupall (node:dns:120:26)",
        "npm error A complete log of this run can be found in: /home/u/.npm/_logs/debug-0.log",
        "",
        "Node.js v20.20.2",
        "",
      ].join("\n"),
    );
    process.exit(1);
  }
  if (argv.includes("--hang")) {
    // Reads nothing, answers nothing.
    setInterval(() => {}, 60_000);
    return;
  }
  const server = new McpServer({ name: "gadget-fixture", version: "1.0.0" });
  registerFixtureTools(server, "stdio");
  await server.connect(new StdioServerTransport());
}

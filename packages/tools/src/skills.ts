// Skills: `.agents/skills/<name>/SKILL.md` in the worktree, listed to the model by name and
// description (front matter) and read whole with `load_skill`. The worktree is the agent's and the
// repository's, so hostile: a folder or SKILL.md that is a symbolic link is not followed, only
// regular files are read (never a pipe), and what is read is capped.
import { lstat, readdir, realpath } from "node:fs/promises";
import path from "node:path";
import { type AnyTool, defineTool, ToolError } from "@gadget/agent";
import { z } from "zod";
import { parseFrontMatter } from "./front-matter.ts";
import { openRegularForRead } from "./regular-file.ts";
import { formatBytes, plural } from "./text.ts";

/** A skill as the model sees it in the system prompt. */
export interface SkillSummary {
  name: string;
  description: string;
}

export interface SkillsOptions {
  /** Most skills listed. Default: 100. */
  maxSkills?: number;
  /**
   * Bytes of a SKILL.md `load_skill` gives the model. Default: 32 KiB, under the engine's cut of
   * a tool's output, so the model reads where the rest is.
   */
  maxSkillBytes?: number;
  /** Characters of a description in the list. Default: 300. */
  maxDescriptionChars?: number;
}

/** Where skills live, relative to the workspace root. */
export const SKILLS_FOLDER = ".agents/skills";

/** A skill's folder name: what `load_skill` takes. */
const skillNamePattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** Bytes read of each SKILL.md to find its front matter when listing. */
const headBytes = 16 * 1024;

/** The real skills folder, or null when it is missing or a link (or `.agents` is) on the way. */
async function skillsFolder(workspace: string): Promise<string | null> {
  const root = await realpath(workspace);
  let current = root;
  for (const part of SKILLS_FOLDER.split("/")) {
    current = path.join(current, part);
    const stats = await lstat(current).catch(() => null);
    if (!stats?.isDirectory()) return null;
  }
  return current;
}

/** Reads at most `limit` bytes of a skill's SKILL.md (regular, inside the folder, no link). */
async function readSkillFile(
  folder: string,
  name: string,
  limit: number,
): Promise<{ text: string; size: number }> {
  const directory = path.join(folder, name);
  const stats = await lstat(directory).catch(() => null);
  const relative = `${SKILLS_FOLDER}/${name}/SKILL.md`;
  if (stats?.isSymbolicLink())
    throw new ToolError(
      "path_outside_workspace",
      `Refused skill "${name}": its folder is a symbolic link.`,
    );
  if (!stats?.isDirectory()) throw new ToolError("not_found", `No skill "${name}".`);
  const file = path.join(directory, "SKILL.md");
  const fileStats = await lstat(file).catch(() => null);
  if (!fileStats) throw new ToolError("not_found", `Skill "${name}" has no SKILL.md.`);
  if (fileStats.isSymbolicLink())
    throw new ToolError(
      "path_outside_workspace",
      `Refused ${relative}: it is a symbolic link; skills are read only from regular files.`,
    );
  const handle = await openRegularForRead(file, { root: folder, relative });
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(Math.min(size, limit));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const bytes = buffer.subarray(0, bytesRead);
    if (bytes.includes(0))
      throw new ToolError("binary_file", `Refused ${relative}: it is not a text file.`);
    return { text: bytes.toString("utf8"), size };
  } finally {
    await handle.close();
  }
}

/**
 * The skills of the worktree, by name: each `.agents/skills/<name>/SKILL.md` that is a regular
 * file, with its front matter's `description` on one line. Folders and files that are links, or
 * names that are not plain words, are left out; none at all is an empty list.
 * @example const skills = await findSkills(worktree); // [{ name: "release", description: "How we cut a release" }]
 */
export async function findSkills(
  workspace: string,
  options: SkillsOptions = {},
): Promise<SkillSummary[]> {
  const folder = await skillsFolder(workspace).catch(() => null);
  if (!folder) return [];
  const maxDescription = options.maxDescriptionChars ?? 300;
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  const names = entries
    .filter((entry) => entry.isDirectory() && skillNamePattern.test(entry.name))
    .map((entry) => entry.name)
    .sort()
    .slice(0, options.maxSkills ?? 100);
  const skills = await Promise.all(
    names.map(async (name) => {
      const head = await readSkillFile(folder, name, headBytes).catch(() => null);
      if (!head) return null;
      const described = parseFrontMatter(head.text).fields.description ?? "";
      const line = described.replace(/\s+/g, " ").trim();
      const description =
        line.length > maxDescription ? `${line.slice(0, maxDescription)}…` : line || "—";
      return { name, description };
    }),
  );
  return skills.filter((skill): skill is SkillSummary => skill !== null);
}

export const loadSkillInput = z.object({
  name: z
    .string()
    .regex(skillNamePattern, "a skill's name as listed: letters, digits, _, - and . only")
    .describe("The skill's name, as listed under Skills in the system prompt"),
});

/**
 * `load_skill {name}`: the whole SKILL.md of a listed skill (up to `maxSkillBytes`), read-only and
 * so offered in every mode. `skills` are the names listed to the model, for its "did you mean".
 * @example const tool = createLoadSkillTool(await findSkills(worktree));
 */
export function createLoadSkillTool(
  skills: readonly SkillSummary[],
  options: SkillsOptions = {},
): AnyTool {
  const maxBytes = options.maxSkillBytes ?? 32 * 1024;
  const known = skills.map((skill) => skill.name);
  return defineTool({
    name: "load_skill",
    description: `Reads a skill of this project (${SKILLS_FOLDER}/<name>/SKILL.md): instructions for a kind of task. Load the one that fits before doing that task, then follow it.`,
    inputSchema: loadSkillInput,
    permission: "read",
    describe: ({ name }) => `Load skill ${name}`,
    async execute({ name }, { workspace }) {
      const folder = await skillsFolder(workspace);
      const listed = known.length ? ` Skills: ${known.join(", ")}.` : "";
      if (!folder)
        throw new ToolError("not_found", `This workspace has no ${SKILLS_FOLDER} folder.${listed}`);
      let skill: { text: string; size: number };
      try {
        skill = await readSkillFile(folder, name, maxBytes);
      } catch (error) {
        if (error instanceof ToolError && error.code === "not_found")
          throw new ToolError("not_found", `${error.message}${listed}`);
        throw error;
      }
      const relative = `${SKILLS_FOLDER}/${name}/SKILL.md`;
      const cut =
        skill.size > maxBytes
          ? `\n\n… (cut: ${relative} is ${formatBytes(skill.size)}; the first ${formatBytes(maxBytes)} are shown. Read the rest with read_file.)`
          : "";
      const lines = skill.text.split("\n").length;
      return {
        ok: true,
        output: `# Skill ${name} (${relative}; files it names are in its folder)\n\n${skill.text}${cut}`,
        summary: `Loaded skill ${name} (${plural(lines, "line")}${cut ? ", cut" : ""})`,
      };
    },
  });
}

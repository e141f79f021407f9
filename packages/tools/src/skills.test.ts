// Skills: the list the model sees (front matter, links and odd names left out) and load_skill on a
// hostile worktree (a linked SKILL.md or folder, a pipe, a huge file, a name that climbs out).
import { execFileSync } from "node:child_process";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "@gadget/agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseFrontMatter } from "./front-matter.ts";
import { createLoadSkillTool, findSkills } from "./skills.ts";
import { callTool, makeWorkspace, type TestWorkspace, toolContext } from "./test-support.ts";

let workspace: TestWorkspace;
const skill = (description: string, body: string) =>
  `---\nname: x\ndescription: ${description}\n---\n${body}\n`;

beforeAll(async () => {
  workspace = await makeWorkspace({
    ".agents/skills/release/SKILL.md": skill("How we cut a release", "1. Bump the version."),
    ".agents/skills/review/SKILL.md": skill('"Review a change,\tthe team\'s way"', "Read it all."),
    ".agents/skills/plain/SKILL.md": "No front matter at all.\n",
    ".agents/skills/huge/SKILL.md": skill("A big one", "z".repeat(200_000)),
    ".agents/skills/no-file/README.md": "not a skill\n",
  });
  const skills = path.join(workspace.root, ".agents/skills");
  // A SKILL.md that is a link to a secret outside, and a skill folder that is a link out.
  await mkdir(path.join(skills, "linked-file"));
  await symlink(
    path.join(workspace.outside, "secret.txt"),
    path.join(skills, "linked-file/SKILL.md"),
  );
  await writeFile(path.join(workspace.outside, "SKILL.md"), skill("outside", "outside secret"));
  await symlink(workspace.outside, path.join(skills, "linked-folder"));
  await mkdir(path.join(skills, "pipe"));
  execFileSync("mkfifo", [path.join(skills, "pipe/SKILL.md")]);
});

afterAll(() => workspace.cleanup());

const load = (name: string, skills = [{ name: "release", description: "" }]) =>
  callTool([createLoadSkillTool(skills)], "load_skill", { name }, toolContext(workspace.root));

async function refusal(name: string): Promise<ToolError> {
  const error = await load(name).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

describe("skills", () => {
  it("lists each regular SKILL.md by folder name with its description on one line", async () => {
    expect(await findSkills(workspace.root)).toEqual([
      { name: "huge", description: "A big one" },
      { name: "plain", description: "—" },
      { name: "release", description: "How we cut a release" },
      { name: "review", description: "Review a change, the team's way" },
    ]);
  });

  it("lists nothing when there is no skills folder, or it is a link", async () => {
    const bare = await makeWorkspace({ "README.md": "# x\n" });
    const linked = await makeWorkspace();
    try {
      await mkdir(path.join(linked.root, ".agents"));
      await symlink(
        path.join(workspace.root, ".agents/skills"),
        path.join(linked.root, ".agents/skills"),
      );
      expect(await findSkills(bare.root)).toEqual([]);
      expect(await findSkills(linked.root)).toEqual([]);
      const error = await callTool(
        [createLoadSkillTool([])],
        "load_skill",
        { name: "release" },
        toolContext(linked.root),
      ).catch((thrown: unknown) => thrown);
      expect((error as ToolError).message).toContain("no .agents/skills folder");
    } finally {
      await bare.cleanup();
      await linked.cleanup();
    }
  });

  it("loads a skill whole", async () => {
    const result = await load("release");
    expect(result.ok).toBe(true);
    expect(result.output).toContain("# Skill release (.agents/skills/release/SKILL.md");
    expect(result.output).toContain("1. Bump the version.");
    expect(result.summary).toBe("Loaded skill release (6 lines)");
  });

  it("caps a huge SKILL.md and says where the rest is", async () => {
    const result = await load("huge");
    expect(result.output.length).toBeLessThan(34_000);
    expect(result.output.endsWith("are shown. Read the rest with read_file.)")).toBe(true);
    expect(result.output.includes("(cut: .agents/skills/huge/SKILL.md is 195.")).toBe(true);
    expect(result.summary).toContain("cut");
  });

  it("refuses a linked SKILL.md or skill folder, a pipe, and names that are not a skill's", async () => {
    expect((await refusal("linked-file")).code).toBe("path_outside_workspace");
    expect((await refusal("linked-folder")).code).toBe("path_outside_workspace");
    expect((await refusal("pipe")).code).toBe("not_a_file");
    const missing = await refusal("relase");
    expect(missing.code).toBe("not_found");
    expect(missing.message).toContain("Skills: release");
    expect((await refusal("no-file")).message).toContain("has no SKILL.md");
    for (const name of ["../../outside", ".agents", "a/b"]) {
      const error = await load(name).catch((thrown: unknown) => thrown);
      expect(String((error as Error).message)).not.toContain("outside secret");
    }
  });
});

describe("parseFrontMatter", () => {
  it("reads flat keys and keeps the body; no closing line means no front matter", () => {
    expect(
      parseFrontMatter("---\r\nDescription: 'Quoted'\r\nlist:\r\n  - a\r\n---\r\nBody"),
    ).toEqual({
      fields: { description: "Quoted", list: "" },
      body: "Body",
    });
    expect(parseFrontMatter("---\ndescription: x\nno end").fields).toEqual({});
    expect(parseFrontMatter("\uFEFF---\n__proto__: x\n---\n").fields).toEqual({});
  });
});

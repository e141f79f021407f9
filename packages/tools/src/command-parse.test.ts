// The command-line parser: shell quoting understood, shell features refused, the deny list applied.
import { ToolError } from "@gadget/agent";
import { describe, expect, it } from "vitest";
import { parseCommand } from "./command-parse.ts";
import { DEFAULT_DENIED_COMMANDS } from "./options.ts";

const deny = { deniedCommands: DEFAULT_DENIED_COMMANDS };

function argv(command: string): string[][] {
  return parseCommand(command, deny).steps.map((step) =>
    step.kind === "cd" ? ["cd", step.directory] : step.words.map((word) => word.value),
  );
}

function refusal(command: string): string {
  try {
    parseCommand(command, deny);
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe("command_refused");
    return (error as ToolError).message;
  }
  throw new Error(`${command} was not refused`);
}

describe("parseCommand: words", () => {
  it("splits on whitespace and removes quotes like a shell", () => {
    expect(argv(`git commit -m "fix: a \\"quoted\\" word" --author='A B'`)).toEqual([
      ["git", "commit", "-m", 'fix: a "quoted" word', "--author=A B"],
    ]);
    expect(argv("echo a\\ b 'c d'\"e\" ''")).toEqual([["echo", "a b", "c de", ""]]);
    expect(argv(`node -e "console.log('hi')"`)).toEqual([["node", "-e", "console.log('hi')"]]);
  });

  it("keeps $ literal where a shell would: single quotes, escapes, a lone $", () => {
    expect(argv(`grep -e '$HOME' -e "price\\$" -e 'a$(b)' x$`)).toEqual([
      ["grep", "-e", "$HOME", "-e", "price$", "-e", "a$(b)", "x$"],
    ]);
    expect(argv('grep "end$" file')).toEqual([["grep", "end$", "file"]]);
  });

  it("treats # as a comment only at the start of a word", () => {
    expect(argv("echo a#b # the rest is a comment")).toEqual([["echo", "a#b"]]);
    expect(argv("git commit -m 'fix #12'")).toEqual([["git", "commit", "-m", "fix #12"]]);
  });

  it("splits && chains and turns cd into a step", () => {
    const { steps } = parseCommand("cd packages/app && npm test -- --run && npm run lint", deny);
    expect(steps.map((step) => step.kind)).toEqual(["cd", "exec", "exec"]);
    expect(steps[0]).toMatchObject({ kind: "cd", directory: "packages/app" });
    expect(steps[1]?.text).toBe("npm test -- --run");
  });

  it("marks unquoted globs for expansion and leaves quoted ones literal", () => {
    const [step] = parseCommand(`ls src/*.ts "*.md" 'a?'`, deny).steps;
    if (step?.kind !== "exec") throw new Error("expected exec");
    expect(step.words[1]).toEqual({ value: "src/*.ts", glob: "src/*.ts" });
    expect(step.words[2]).toEqual({ value: "*.md" });
    expect(step.words[3]).toEqual({ value: "a?" });
    const [mixed] = parseCommand(`ls "a*"*`, deny).steps;
    if (mixed?.kind !== "exec") throw new Error("expected exec");
    expect(mixed.words[1]).toEqual({ value: "a**", glob: "a\\**" });
  });

  it("allows braces that are not expansions", () => {
    expect(argv("git show HEAD@{1}")).toEqual([["git", "show", "HEAD@{1}"]]);
    expect(argv("echo '{a,b}'")).toEqual([["echo", "{a,b}"]]);
  });
});

describe("parseCommand: refusals say why and what to do", () => {
  it.each([
    ["ls | grep x", /Pipes \(\|\).*grep and read_file/],
    ["ls |& cat", /Pipes/],
    ["a || b", /`\|\|` is not supported/],
    ["a; b", /`;` is not supported.*&&/],
    ["a & b", /Background jobs/],
    ["echo x > f", /Redirection \(>\).*write_file/],
    ["echo x >> f", /Redirection \(>>\)/],
    ["cmd 2>&1", /Redirection \(>&\)/],
    ["cat < f", /Redirection \(<\)/],
    ["cat <<< hi", /Redirection \(<<<\)/],
    ["diff <(ls) x", /Redirection \(<\(\)/],
    ["(cd x && ls)", /Subshells/],
    ["echo $(id)", /Command substitution/],
    ['echo "$(id)"', /Command substitution/],
    ["echo $((1+2))", /Command substitution/],
    ["echo `id`", /Command substitution/],
    ['echo "`id`"', /Command substitution/],
    ["echo $HOME", /Variable expansion \(\$HOME\)/],
    ['echo "$HOME"', /Variable expansion/],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell syntax under test.
    ["echo ${HOME}", /Variable expansion/],
    ["echo $1", /Variable expansion/],
    ["echo $'a'", /quoting is not supported/],
    ["ls ~/x", /home directory/],
    ["mkdir src/{a,b}", /Brace expansion/],
    ["echo {1..3}", /Brace expansion/],
    ["echo 'open", /Unterminated single quote/],
    ['echo "open', /Unterminated double quote/],
    ["ls\nrm -rf x", /Newlines/],
    ["", /empty/],
    ["&& ls", /needs a command on both sides/],
    ["ls &&", /needs a command on both sides/],
    ["cd src", /no effect.*cwd parameter/],
    ["cd && ls", /exactly one directory/],
    ["cd a b && ls", /exactly one directory/],
    ["cd - && ls", /cd -/],
  ])("%j", (command, message) => {
    expect(refusal(command)).toMatch(message);
  });

  it.each([
    "export",
    "source",
    ".",
    "alias",
    "eval",
    "exec",
    "set",
    "unset",
    "pushd",
    "type",
    "read",
  ])("refuses the builtin %s", (builtin) => {
    expect(refusal(`${builtin} x && ls`)).toMatch(/shell builtin|deny list/);
  });

  it("refuses environment assignments before a command", () => {
    expect(refusal("NODE_OPTIONS=--inspect npm test")).toMatch(
      /Setting environment variables \(NODE_OPTIONS=…\)/,
    );
  });
});

describe("parseCommand: deny list", () => {
  it.each([
    "sudo ls",
    "/usr/bin/sudo ls",
    "su -",
    "git push",
    "git push --force origin main",
    "git -C sub push",
    "git --git-dir .git push",
    "git --no-pager push",
    "git -c core.sshCommand=evil fetch",
    "git -ccore.pager=evil log",
    "git --config-env=core.sshCommand=X fetch",
    "git config user.email x",
    "bash -c 'id'",
    "sh -xc 'id'",
    "env FOO=1 npm test",
    "xargs rm",
    "timeout 10 git push",
    "nice -n 5 sudo id",
    "npm publish",
  ])("refuses %j", (command) => {
    expect(refusal(command)).toMatch(/deny list/);
  });

  it.each([
    "git status",
    "git log --grep push",
    "git commit -c HEAD",
    "git diff HEAD~1..HEAD",
    "grep -r sudo src",
    "bash scripts/build.sh",
    "npm test",
    "timeout 10 npm test",
  ])("allows %j", (command) => {
    expect(() => parseCommand(command, deny)).not.toThrow();
  });

  it("takes a custom list", () => {
    expect(() => parseCommand("docker ps", deny)).not.toThrow();
    expect(() =>
      parseCommand("docker ps", { deniedCommands: [...DEFAULT_DENIED_COMMANDS, "docker"] }),
    ).toThrow(/deny list/);
    expect(() => parseCommand("sudo ls", { deniedCommands: [] })).not.toThrow();
  });
});

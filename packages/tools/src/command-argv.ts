// What a command's program may be: not a shell builtin, not a variable assignment, nothing on the
// workspace's deny list (looking through wrappers such as `timeout` and `nice`). Every refusal is a
// ToolError `command_refused` that says what to do instead.
import path from "node:path";
import { ToolError } from "@gadget/agent";

/** Thrown for any command that cannot run; `code` is always `command_refused`. */
export function refuse(message: string): never {
  throw new ToolError("command_refused", message);
}

export const noShell = "Commands are spawned directly, without a shell.";

/** Shell builtins that cannot be spawned, with what to do instead. */
const builtinHints: Record<string, string> = {
  export:
    "Each command runs in a fresh process with a fixed environment; pass settings as arguments or configuration files.",
  unset: "Each command runs in a fresh process with a fixed environment.",
  set: "Each command runs in a fresh process; there are no shell options.",
  declare: "There are no shell variables.",
  typeset: "There are no shell variables.",
  local: "There are no shell variables.",
  readonly: "There are no shell variables.",
  source: "Run the script as a program instead, e.g. `bash script.sh` or `./script.sh`.",
  ".": "Run the script as a program instead, e.g. `bash script.sh` or `./script.sh`.",
  alias: "There are no aliases; run the program itself.",
  unalias: "There are no aliases.",
  eval: "Run the command itself.",
  exec: "Run the command itself.",
  exit: "A command ends when its program ends.",
  return: "A command ends when its program ends.",
  trap: "There is no shell to trap signals in.",
  ulimit: "Resource limits cannot be changed.",
  umask: "The file creation mask cannot be changed.",
  pushd: "Use `cd <dir> && <command>` or the cwd parameter.",
  popd: "Use `cd <dir> && <command>` or the cwd parameter.",
  dirs: "Use `cd <dir> && <command>` or the cwd parameter.",
  read: "Commands have no input (stdin is closed).",
  shopt: "There are no shell options.",
  history: "There is no shell history.",
  builtin: "Run the program itself.",
  command: "To check whether a program exists use `which <name>`.",
  type: "To check whether a program exists use `which <name>`.",
  hash: "To check whether a program exists use `which <name>`.",
  wait: "Commands always run in the foreground.",
  jobs: "Commands always run in the foreground.",
  fg: "Commands always run in the foreground.",
  bg: "Commands always run in the foreground.",
  disown: "Commands always run in the foreground.",
  let: "There are no shell variables.",
  shift: "There are no shell variables.",
  logout: "A command ends when its program ends.",
  enable: "Run the program itself.",
  complete: "There is no interactive shell.",
  compgen: "There is no interactive shell.",
  bind: "There is no interactive shell.",
  getopts: "There are no shell variables.",
  mapfile: "There are no shell variables.",
  readarray: "There are no shell variables.",
  suspend: "There is no interactive shell.",
  times: "There is no interactive shell.",
  fc: "There is no shell history.",
};

/** Programs that run another program given as an argument; the deny list looks through them. */
const wrapperPrograms = new Set([
  "nice",
  "nohup",
  "timeout",
  "stdbuf",
  "setsid",
  "time",
  "ionice",
  "taskset",
  "chrt",
  "flock",
  "watch",
  "unbuffer",
  "env",
  "xargs",
]);

/** Options that take the next word as their value, per program (so subcommands are found). */
const optionsWithValue: Record<string, ReadonlySet<string>> = {
  git: new Set([
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
    "--list-cmds",
  ]),
};
interface DenyRule {
  text: string;
  program: string;
  words: string[];
}

function parseDenyRules(entries: readonly string[]): DenyRule[] {
  return entries
    .map((entry) => entry.trim().split(/\s+/).filter(Boolean))
    .filter((words) => words.length > 0)
    .map((words) => ({
      text: words.join(" "),
      program: words[0] as string,
      words: words.slice(1),
    }));
}

function optionMatches(argument: string, option: string): boolean {
  if (argument === option || argument.startsWith(`${option}=`)) return true;
  if (/^-[A-Za-z]$/.test(option)) {
    // Attached value (-cfoo=bar) or a cluster of short flags (-ec).
    if (argument.startsWith(option) && !argument.startsWith("--")) return true;
    return /^-[A-Za-z]+$/.test(argument) && argument.includes(option.slice(1));
  }
  return false;
}

/** Whether `args` (after the program) match a rule's words: options before the subcommand, then subcommands. */
function argumentsMatch(
  program: string,
  args: readonly string[],
  words: readonly string[],
): boolean {
  const takesValue = optionsWithValue[program] ?? new Set<string>();
  let position = 0;
  for (const word of words) {
    if (word.startsWith("-")) {
      let found = false;
      for (let index = position; index < args.length; index++) {
        const argument = args[index] as string;
        if (argument === "--" || !argument.startsWith("-")) break;
        if (optionMatches(argument, word)) {
          found = true;
          break;
        }
        if (takesValue.has(argument)) index++;
      }
      if (!found) return false;
      continue;
    }
    let index = position;
    while (index < args.length) {
      const argument = args[index] as string;
      if (argument === "--") {
        index++;
        break;
      }
      if (!argument.startsWith("-")) break;
      index += takesValue.has(argument) ? 2 : 1;
    }
    if (args[index] !== word) return false;
    position = index + 1;
  }
  return true;
}

function deniedBy(argv: readonly string[], rules: readonly DenyRule[]): DenyRule | undefined {
  const program = path.basename(argv[0] ?? "");
  for (const rule of rules) {
    if (program === rule.program && argumentsMatch(program, argv.slice(1), rule.words)) return rule;
  }
  if (wrapperPrograms.has(program)) {
    // `timeout 5 sudo …`, `nice git push`: look for a denied program anywhere after a wrapper.
    for (let index = 1; index < argv.length; index++) {
      const inner = path.basename(argv[index] as string);
      for (const rule of rules) {
        if (inner === rule.program && argumentsMatch(inner, argv.slice(index + 1), rule.words)) {
          return rule;
        }
      }
    }
  }
  return undefined;
}

/** Refuses a step's argv if it is a builtin, an assignment or on the deny list. */
export function checkArgv(argv: readonly string[], deniedCommands: readonly string[]): void {
  const program = argv[0] ?? "";
  if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(program)) {
    refuse(
      `Setting environment variables (${program.split("=")[0]}=…) is not supported: ${noShell} Commands run with a fixed environment (CI=1, PAGER=cat); pass settings as arguments or configuration files.`,
    );
  }
  const hint = builtinHints[program];
  if (hint !== undefined && Object.hasOwn(builtinHints, program)) {
    refuse(`\`${program}\` is a shell builtin and cannot run: ${noShell} ${hint}`);
  }
  const rule = deniedBy(argv, parseDenyRules(deniedCommands));
  if (rule) {
    refuse(
      `\`${rule.text}\` is on this workspace's deny list and was not run. Do not try to work around it; if it is needed, say so in your response so the user can run it.`,
    );
  }
}

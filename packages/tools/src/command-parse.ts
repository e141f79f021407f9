// Parses a command line into argv steps joined by && (spawn-only, never a shell), refusing
// every shell feature that would need a shell, with a message that says what to do instead.
//
// Hand-written rather than shell-quote: shell-quote expands $VAR to "" (or splits the word when
// given an env function), passes backticks through as text, turns "$(id)" into "$" + "(id)" and
// reads `a#b` as a comment. Refusing correctly needs the quoting context of every $, ` and glob
// character, which this tokenizer keeps.
import { checkArgv, noShell, refuse } from "./command-argv.ts";

/** One argument after quote removal. */
export interface CommandWord {
  value: string;
  /**
   * Present when the word has unquoted glob characters (`*`, `?`, `[`): the pattern to expand,
   * with quoted or escaped special characters backslash-escaped.
   */
  glob?: string;
}

export type CommandStep =
  | { kind: "cd"; directory: string; text: string }
  | { kind: "exec"; words: CommandWord[]; text: string };

export interface ParsedCommand {
  steps: CommandStep[];
}

export interface ParseCommandOptions {
  /** Deny-list entries (see DEFAULT_DENIED_COMMANDS). Default: none. */
  deniedCommands?: readonly string[];
}

const operatorMessages: Record<string, string> = {
  "|": `Pipes (|) are not supported: ${noShell} Run the first command alone (its output comes back to you), or use the grep and read_file tools to filter text.`,
  "|&": `Pipes (|&) are not supported: ${noShell} Run the first command alone; its stdout and stderr both come back to you.`,
  "||": `\`||\` is not supported: ${noShell} Run the command, check its exit code, then decide what to run next.`,
  ";": `\`;\` is not supported: ${noShell} Chain commands with \`&&\` (the chain stops at the first failure) or make separate run_command calls.`,
  ";;": `\`;;\` is not supported: ${noShell}`,
  "&": `Background jobs (&) are not supported: every command must finish before the call returns. Run it in the foreground (raise timeout_ms for long commands).`,
  "(": `Subshells and grouping with ( ) are not supported: ${noShell} Quote parentheses that are part of an argument.`,
  ")": `Subshells and grouping with ( ) are not supported: ${noShell} Quote parentheses that are part of an argument.`,
};

function redirectMessage(operator: string): string {
  return `Redirection (${operator}) is not supported: ${noShell} The command's output already comes back to you; to create a file use write_file, to read one use read_file.`;
}

const substitutionMessage = `Command substitution ($(…) or backticks) is not supported: ${noShell} Run the inner command first, then use its output in the next call.`;
const variableMessage = (name: string) =>
  `Variable expansion (${name}) is not supported: ${noShell} Nothing would replace it. Write the value itself, or put the argument in single quotes to pass a literal $.`;

interface Token {
  type: "word" | "operator";
  value: string;
  word?: CommandWord;
}

const globSpecials = new Set(["*", "?", "[", "]", "{", "}", "(", ")", "!", "+", "@", "\\"]);

class WordBuilder {
  value = "";
  pattern = "";
  hasGlob = false;
  started = false;
  /** Unquoted characters with quoted ones replaced by a placeholder, for brace-expansion checks. */
  unquoted = "";

  literal(character: string): void {
    this.started = true;
    this.value += character;
    this.pattern += globSpecials.has(character) ? `\\${character}` : character;
    this.unquoted += "\u0000";
  }

  plain(character: string): void {
    this.started = true;
    this.value += character;
    this.unquoted += character;
    if (character === "*" || character === "?" || character === "[") {
      this.hasGlob = true;
      this.pattern += character;
    } else {
      this.pattern +=
        globSpecials.has(character) && character !== "]" ? `\\${character}` : character;
    }
  }
}

function isNameStart(character: string | undefined): boolean {
  return character !== undefined && /[A-Za-z_]/.test(character);
}

/** Splits a command line into words and operators, refusing expansions. */
export function tokenize(command: string): Token[] {
  const tokens: Token[] = [];
  let word = new WordBuilder();
  const endWord = () => {
    if (word.started) {
      if (/\{[^{}]*(,|\.\.)[^{}]*\}/.test(word.unquoted)) {
        refuse(
          `Brace expansion ({a,b}) is not supported: ${noShell} Write each argument out, or quote the braces if they are literal.`,
        );
      }
      const commandWord: CommandWord = { value: word.value };
      if (word.hasGlob) commandWord.glob = word.pattern;
      tokens.push({ type: "word", value: word.value, word: commandWord });
    }
    word = new WordBuilder();
  };
  const dollar = (index: number, quoted: boolean): void => {
    const next = command[index + 1];
    if (next === "(") refuse(substitutionMessage);
    if (next === "{" || isNameStart(next) || (next !== undefined && /[0-9@*#?$!-]/.test(next))) {
      const name =
        next === "{"
          ? "$" + "{…}"
          : `$${/^[A-Za-z_0-9]+/.exec(command.slice(index + 1))?.[0] ?? next}`;
      refuse(variableMessage(name));
    }
    if (!quoted && (next === "'" || next === '"')) {
      refuse(
        `$'…' and $"…" quoting is not supported: ${noShell} Use plain single or double quotes.`,
      );
    }
  };

  let index = 0;
  while (index < command.length) {
    const character = command[index] as string;
    if (character === " " || character === "\t") {
      endWord();
      index++;
      continue;
    }
    if (character === "\n" || character === "\r") {
      refuse(
        `Newlines separate commands in a shell and are not supported here: ${noShell} Chain commands with \`&&\`, or make separate run_command calls.`,
      );
    }
    if (character === "\\") {
      const next = command[index + 1];
      if (next === undefined) {
        word.literal("\\");
        index++;
      } else if (next === "\n") {
        index += 2;
      } else {
        word.literal(next);
        index += 2;
      }
      continue;
    }
    if (character === "'") {
      const end = command.indexOf("'", index + 1);
      if (end === -1) refuse("Unterminated single quote ('). Close the quote.");
      word.started = true;
      for (const quoted of command.slice(index + 1, end)) word.literal(quoted);
      index = end + 1;
      continue;
    }
    if (character === '"') {
      word.started = true;
      index++;
      let closed = false;
      while (index < command.length) {
        const inner = command[index] as string;
        if (inner === '"') {
          closed = true;
          index++;
          break;
        }
        if (inner === "\\") {
          const next = command[index + 1];
          if (next !== undefined && '$`"\\\n'.includes(next)) {
            if (next !== "\n") word.literal(next);
            index += 2;
            continue;
          }
          word.literal("\\");
          index++;
          continue;
        }
        if (inner === "`") refuse(substitutionMessage);
        if (inner === "$") dollar(index, true);
        word.literal(inner);
        index++;
      }
      if (!closed) refuse('Unterminated double quote ("). Close the quote.');
      continue;
    }
    if (character === "`") refuse(substitutionMessage);
    if (character === "$") {
      dollar(index, false);
      word.plain("$");
      index++;
      continue;
    }
    if (character === "#" && !word.started) {
      // A comment runs to the end of the line, as in a shell.
      break;
    }
    if (character === "~" && !word.started) {
      refuse(
        "~ (the home directory) is outside the workspace and is not expanded. Use paths relative to the workspace.",
      );
    }
    if ("|&;<>()".includes(character)) {
      endWord();
      const two = command.slice(index, index + 2);
      const three = command.slice(index, index + 3);
      let operator: string = character;
      if (["<<<", "<<-"].includes(three)) operator = three;
      else if (
        ["&&", "||", "|&", ";;", "&>", "<<", "<&", "<>", "<(", ">>", ">&", ">|", ">("].includes(two)
      )
        operator = two;
      tokens.push({ type: "operator", value: operator });
      index += operator.length;
      continue;
    }
    word.plain(character);
    index++;
  }
  endWord();
  return tokens;
}

/** Quotes a word for display in the form a shell would accept. */
export function displayWord(value: string): string {
  if (value !== "" && /^[A-Za-z0-9_\-.,:/=@%+^]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Parses a command line into steps: `&&` splits the chain, `cd <dir>` becomes a working
 * directory change, anything needing a shell is refused with a ToolError (`command_refused`).
 * @example
 * parseCommand("cd packages/app && npm test -- --run").steps;
 * // [{kind:"cd", directory:"packages/app"}, {kind:"exec", words:[npm, test, --, --run]}]
 */
export function parseCommand(command: string, options: ParseCommandOptions = {}): ParsedCommand {
  const tokens = tokenize(command);
  const groups: Token[][] = [[]];
  for (const token of tokens) {
    if (token.type === "operator") {
      if (token.value === "&&") {
        groups.push([]);
        continue;
      }
      const message = operatorMessages[token.value] ?? redirectMessage(token.value);
      refuse(message);
    }
    (groups[groups.length - 1] as Token[]).push(token);
  }
  if (groups.every((group) => group.length === 0)) refuse("The command is empty.");
  if (groups.some((group) => group.length === 0)) {
    refuse("`&&` needs a command on both sides, as in `npm run build && npm test`.");
  }
  const steps: CommandStep[] = groups.map((group, index) => {
    const words = group.map((token) => token.word as CommandWord);
    const text = words.map((word) => (word.glob ? word.value : displayWord(word.value))).join(" ");
    if (words[0]?.value === "cd") {
      if (words.length !== 2 || words[1]?.glob !== undefined) {
        refuse("`cd` takes exactly one directory, as in `cd packages/app && npm test`.");
      }
      if (index === groups.length - 1) {
        refuse(
          "`cd` at the end of a command has no effect: every run_command starts afresh. Use `cd <dir> && <command>` or the cwd parameter.",
        );
      }
      const directory = (words[1] as CommandWord).value;
      if (directory === "-") refuse("`cd -` is not supported; name the directory.");
      return { kind: "cd", directory, text };
    }
    checkArgv(
      words.map((word) => word.value),
      options.deniedCommands ?? [],
    );
    return { kind: "exec", words, text };
  });
  return { steps };
}

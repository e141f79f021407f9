// Git as the drone runs it outside the sandbox: nothing a repository configured may run. Hooks,
// fsmonitor, filters, diff drivers, textconv, merge drivers, ssh and proxy commands, credential
// helpers and upload-pack commands from the repository's own config are overridden on every call
// (the user's global and system config still apply), the `ext::` transport is off, and git never
// enters a nested repository or submodule: their config (which the model can write) is never read
// for anything that runs, because no command of the drone recurses into them.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/** `-c` settings and environment for one git invocation in a repository. */
export interface HardenedGit {
  /** `key=value` settings, each passed as `-c key=value` (simple-git's `config` option). */
  config: string[];
  /** Variables to add to git's environment. */
  env: Record<string, string>;
  /**
   * Options for every fetch, pull and clone: a repository's `remote.<name>.uploadpack` is a list
   * whose first entry wins, so `-c` cannot override it; the command-line option does.
   */
  transport: string[];
  /** Repository settings that were overridden, for a log line. */
  overridden: string[];
  /** Every key set in any scope (lower-case), e.g. to tell whether git knows who commits. */
  keys: ReadonlySet<string>;
}

/** Always set: they can only ever run something or sign with something. */
const alwaysOff = [
  "core.hooksPath=/dev/null",
  "core.fsmonitor=false",
  "protocol.ext.allow=never",
  "diff.external=",
  "commit.gpgSign=false",
  "tag.gpgSign=false",
  "push.gpgSign=false",
  "log.showSignature=false",
  "fetch.recurseSubmodules=false",
  "submodule.recurse=false",
  "push.recurseSubmodules=no",
  // `git status`/`diff` would run `git status` inside every gitlink's directory, with that
  // repository's own filters and fsmonitor: compare gitlinks by commit only.
  "diff.ignoreSubmodules=all",
  "status.submoduleSummary=false",
  // A bare repository planted in the worktree is never taken for the repository of a directory.
  "safe.bareRepository=explicit",
];

/**
 * Keys a repository may not set, with what they become: `null` means "the user's own value(s), or
 * empty" (credential helpers, proxies), a string is the neutral value.
 */
const repositoryKeyRules: Array<[RegExp, string | null]> = [
  [/^filter\.[^=]+\.(clean|smudge|process)$/, ""],
  [/^filter\.[^=]+\.required$/, "false"],
  [/^diff\.[^=]+\.(command|textconv)$/, ""],
  [/^merge\.[^=]+\.(driver|recursive)$/, ""],
  [/^trailer\.[^=]+\.(command|cmd)$/, ""],
  [/^core\.(askpass|alternaterefscommand|editor|pager|worktree)$/, null],
  [/^sequence\.editor$/, null],
  [/^gpg(\.[^=]+)?\.program$/, null],
  [/^credential(\.[^=]+)?\.helper$/, null],
  [/^http(\.[^=]+)?\.proxy$/, null],
];

const trustedScopes = new Set(["system", "global"]);

type Environment = Readonly<Record<string, string | undefined>>;

async function gitConfig(
  args: string[],
  cwd: string | undefined,
  env: Environment,
): Promise<string> {
  try {
    const { stdout } = await run("git", ["config", ...args], {
      ...(cwd ? { cwd } : {}),
      env: { ...env, GIT_TERMINAL_PROMPT: "0" },
      maxBuffer: 4 * 1024 * 1024,
    });
    return stdout;
  } catch {
    // No repository, or no such key: nothing to override from there.
    return "";
  }
}

/** The user's own values of a key (system and global config), in order. */
async function trustedValues(key: string, env: Environment): Promise<string[]> {
  const values: string[] = [];
  for (const scope of ["--system", "--global"]) {
    const output = await gitConfig([scope, "--get-all", "-z", key], undefined, env);
    values.push(...output.split("\0").filter((value) => value !== ""));
  }
  return values;
}

/**
 * What every git call of the drone in `directory` must carry. Reads the repository's config
 * (includes followed) and overrides each setting that could run a program; pass `null` for a call
 * outside any repository (a clone). `env` is the whole environment the call will run with
 * (HOME for the user's global config, GIT_DIR for a private store, GIT_SSH_COMMAND).
 * @example
 * const hardened = await hardenedGit(workspace, env);
 * spawn("git", [...hardened.config.flatMap((entry) => ["-c", entry]), "status"], { env: { ...env, ...hardened.env } });
 */
export async function hardenedGit(
  directory: string | null,
  env: Environment,
): Promise<HardenedGit> {
  const config = [...alwaysOff];
  const overridden: string[] = [];
  const keys = new Set<string>();
  const extraEnv: Record<string, string> = {
    GIT_TERMINAL_PROMPT: "0",
    // core.gitProxy is a list whose first match wins; the variable overrides all of it (empty: none).
    GIT_PROXY_COMMAND: env.GIT_PROXY_COMMAND ?? "",
  };
  if (directory) {
    const listing = await gitConfig(
      ["--list", "--includes", "--show-scope", "--name-only", "-z"],
      directory,
      env,
    );
    const parts = listing.split("\0");
    const seen = new Set<string>();
    for (let index = 0; index + 1 < parts.length; index += 2) {
      const scope = parts[index] as string;
      const key = (parts[index + 1] as string).toLowerCase();
      keys.add(key);
      if (trustedScopes.has(scope) || seen.has(key)) continue;
      if (key === "core.sshcommand") {
        seen.add(key);
        overridden.push(key);
        const own = (await trustedValues("core.sshCommand", env)).at(-1);
        extraEnv.GIT_SSH_COMMAND = env.GIT_SSH_COMMAND ?? own ?? "ssh";
        continue;
      }
      const rule = repositoryKeyRules.find(([pattern]) => pattern.test(key));
      if (!rule) continue;
      seen.add(key);
      overridden.push(key);
      if (rule[1] !== null) {
        config.push(`${key}=${rule[1]}`);
        continue;
      }
      // An empty value first resets a multi-valued key (credential helpers), then the user's own.
      const own = key === "core.worktree" ? [directory] : await trustedValues(key, env);
      config.push(`${key}=`, ...own.map((value) => `${key}=${value}`));
    }
  }
  return {
    config,
    env: extraEnv,
    transport: ["--upload-pack=git-upload-pack"],
    overridden,
    keys,
  };
}

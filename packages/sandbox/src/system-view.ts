// What a sandboxed command sees of the machine besides its workspace: the system read-only, the
// toolchains on PATH that live in the home directory (read-only, their credential files masked),
// and nothing of the home directory itself.
import { constants } from "node:fs";
import { access, lstat, readdir, readlink, stat } from "node:fs/promises";
import path from "node:path";

/** The drone's machine as the sandbox needs to know it. */
export interface HostLayout {
  /** The drone user's real home directory (never visible inside). */
  home: string;
  /** The drone's executable search path, in order. */
  searchPath: readonly string[];
  /** The Node executable (the network bridge runs on it). */
  nodePath: string;
  /** The drone's user id: root's sandbox also hides the root-only files of /etc. */
  uid: number;
  /** More directories to show read-only (the drone config's `sandbox.readOnlyPaths`). */
  readOnlyPaths?: readonly string[];
}

/** The read-only part of a sandbox's file system, computed once per drone. */
export interface SystemView {
  /** bwrap arguments that mount the system: `--ro-bind /usr /usr`, `--symlink usr/bin /bin`, … */
  systemArguments: string[];
  /** Directories under the home directory shown read-only (toolchains on PATH). */
  toolchains: string[];
  /** Files shown empty and directories shown empty (root-only system files, credentials). */
  maskedFiles: string[];
  maskedDirectories: string[];
  /** Every read-only bind's path, to know where a hidden path would otherwise show. */
  visibleRoots: string[];
}

/** Top-level system directories shown read-only when they exist. */
const systemDirectories = ["/usr", "/etc", "/opt", "/nix", "/gnu", "/snap"];
/** Top-level names that are symbolic links into /usr on merged-/usr systems, else directories. */
const rootLinks = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/** Directories under the home directory that hold secrets: never shown, even if on PATH. */
const secretHomeDirectories = new Set([
  ".ssh",
  ".gnupg",
  ".aws",
  ".azure",
  ".kube",
  ".docker",
  ".password-store",
  ".gcloud",
]);

/** Directories many programs share (~/.local/bin, ~/.config/composer/…/bin): only the PATH entry shows. */
const sharedHomeDirectories = new Set([".config", ".local", ".cache", ".npm"]);

/** A toolchain's companions that it cannot run without (rustup's proxies in ~/.cargo/bin). */
const companions: Record<string, string[]> = { ".cargo": [".rustup"] };

/** Credential files toolchain directories are known to keep; shown empty. */
const credentialFiles = [
  "credentials",
  "credentials.toml",
  ".credentials.toml",
  "auth.json",
  ".netrc",
  ".npmrc",
  ".pypirc",
  ".git-credentials",
];

async function exists(target: string): Promise<boolean> {
  return access(target, constants.F_OK).then(
    () => true,
    () => false,
  );
}

function isWithin(parent: string, candidate: string): boolean {
  const relative = path.relative(parent, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/** Root-only entries of /etc (shadow, host keys, private TLS keys): root's sandbox shows them empty. */
async function rootOnlyEntries(
  directory: string,
  depth: number,
  found: { files: string[]; directories: string[] },
): Promise<void> {
  const entries = await readdir(directory, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const full = path.join(directory, entry.name);
    if (entry.isSymbolicLink()) continue;
    const stats = await lstat(full).catch(() => null);
    if (!stats) continue;
    const worldReadable = (stats.mode & 0o004) !== 0;
    if (entry.isDirectory()) {
      if (!worldReadable || (stats.mode & 0o001) === 0) found.directories.push(full);
      else if (depth > 0) await rootOnlyEntries(full, depth - 1, found);
    } else if (entry.isFile() && !worldReadable) {
      found.files.push(full);
    }
  }
}

/** The toolchain directories under `home` that PATH (and Node) need, per the rules above. */
async function toolchainDirectories(
  layout: HostLayout,
  hidden: readonly string[],
): Promise<string[]> {
  const home = layout.home;
  const wanted = [...layout.searchPath, path.dirname(path.dirname(layout.nodePath))];
  const result = new Set<string>();
  for (const entry of wanted) {
    if (!path.isAbsolute(entry) || !isWithin(home, entry) || entry === home) continue;
    const top = path.relative(home, entry).split(path.sep)[0] as string;
    let directory = path.join(home, top);
    if (secretHomeDirectories.has(top)) continue;
    // A shared top (~/.local holds the drone's own data) shows only the entry itself.
    const holdsHidden = hidden.some((secret) => isWithin(directory, secret));
    if (sharedHomeDirectories.has(top) || holdsHidden) directory = entry;
    if (hidden.some((secret) => isWithin(secret, directory) || isWithin(directory, secret)))
      continue;
    if (
      !(await stat(directory).then(
        (stats) => stats.isDirectory(),
        () => false,
      ))
    )
      continue;
    result.add(directory);
    for (const companion of companions[top] ?? []) {
      const extra = path.join(home, companion);
      if (await exists(extra)) result.add(extra);
    }
  }
  return [...result].sort();
}

/**
 * Computes the read-only view for a drone. `hidden` are the drone's own paths (config, workspaces,
 * journal) that must never show.
 * @example const view = await planSystemView(layout, [configDirectory, workspaceRoot]);
 */
export async function planSystemView(
  layout: HostLayout,
  hidden: readonly string[],
): Promise<SystemView> {
  const systemArguments: string[] = [];
  const visibleRoots: string[] = [];
  for (const link of rootLinks) {
    const stats = await lstat(link).catch(() => null);
    if (!stats) continue;
    if (stats.isSymbolicLink()) {
      systemArguments.push("--symlink", await readlink(link), link);
    } else if (stats.isDirectory()) {
      systemArguments.push("--ro-bind", link, link);
      visibleRoots.push(link);
    }
  }
  for (const directory of systemDirectories) {
    if (!(await exists(directory))) continue;
    systemArguments.push("--ro-bind", directory, directory);
    visibleRoots.push(directory);
  }
  // Node itself, wherever it is installed (the bridge and most projects need it).
  const nodePrefix = path.dirname(path.dirname(layout.nodePath));
  const extra = [...(layout.readOnlyPaths ?? [])];
  if (
    !visibleRoots.some((root) => isWithin(root, nodePrefix)) &&
    !isWithin(layout.home, nodePrefix)
  ) {
    extra.push(nodePrefix);
  }

  const masked = { files: [] as string[], directories: [] as string[] };
  if (layout.uid === 0) await rootOnlyEntries("/etc", 3, masked);

  const toolchains = await toolchainDirectories(layout, hidden);
  for (const directory of extra) {
    if (path.isAbsolute(directory) && (await exists(directory))) toolchains.push(directory);
  }
  for (const directory of toolchains) {
    visibleRoots.push(directory);
    for (const name of credentialFiles) {
      const candidate = path.join(directory, name);
      if (await exists(candidate)) masked.files.push(candidate);
    }
  }
  return {
    systemArguments,
    toolchains,
    maskedFiles: masked.files,
    maskedDirectories: masked.directories,
    visibleRoots,
  };
}

export { isWithin };

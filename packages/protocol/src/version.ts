// The wire protocol's version. A drone and a server talk only when they agree on the major.

/** Bumped when a socket event or work order changes in a way an older peer cannot read. */
// 2: work orders carry the project's network policy and drones report their sandbox; a drone of
// protocol 1 would silently ignore the policy, so it is refused.
// 3: drones connect on their own Socket.IO path with their credential on the HTTP request, and
// answer `provider_check`; a drone of protocol 2 reaching the browsers' path is told to upgrade.
// 4: file requests name a session's worktree (the default-branch checkout is read-only), and
// drones answer `session_worktree`, report labels, run MCP servers and open pull requests from
// the work order: a drone of protocol 3 would write hand edits into the default branch and leave
// MCP tools and pull requests out without a word, so it is refused with the release to install.
export const PROTOCOL_VERSION = 4;

/** Whether a peer speaking `version` can talk to this build. */
export function isCompatibleProtocol(version: number): boolean {
  return version === PROTOCOL_VERSION;
}

/** The release the server and gadget-drone of this build belong to (their package versions). */
export const RELEASE_VERSION = "0.1.0";

/** Compares two `major.minor.patch` versions numerically (anything after a `-` is ignored). */
export function compareVersions(a: string, b: string): number {
  const parts = (version: string) =>
    (version.split("-")[0] ?? "").split(".").map((part) => Number.parseInt(part, 10) || 0);
  const [left, right] = [parts(a), parts(b)];
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}

// The wire protocol's version. A drone and a server talk only when they agree on the major.

/** Bumped when a socket event or work order changes in a way an older peer cannot read. */
export const PROTOCOL_VERSION = 1;

/** Whether a peer speaking `version` can talk to this build. */
export function isCompatibleProtocol(version: number): boolean {
  return version === PROTOCOL_VERSION;
}

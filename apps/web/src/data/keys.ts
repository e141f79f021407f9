// The query keys of everything the web app reads over REST, one place for all of them: a mutation
// names here what it changed, and the live socket writes into the same entries.

/**
 * Keys by resource. A key that starts with another is inside it: invalidating `projects` also
 * reads again every project's sessions and files.
 * @example queryClient.invalidateQueries({ queryKey: keys.sessions(projectId) });
 */
export const keys = {
  signIns: ["sign-ins"] as const,
  drones: ["drones"] as const,
  providers: ["providers"] as const,
  projects: ["projects"] as const,
  /** One project's sessions. */
  sessions: (projectId: string) => ["projects", projectId, "sessions"] as const,
  /** The files of a project's default branch (`sessionId` ""), or of a session's worktree. */
  files: (projectId: string, sessionId: string) =>
    ["projects", projectId, "files", sessionId] as const,
  /** Every directory listing of those files (what "Refresh" reads again). */
  directories: (projectId: string, sessionId: string) =>
    [...keys.files(projectId, sessionId), "directory"] as const,
  /** One directory's entries ("" is the root). */
  directory: (projectId: string, sessionId: string, path: string) =>
    [...keys.directories(projectId, sessionId), path] as const,
  /** One file's content and sha. */
  file: (projectId: string, sessionId: string, path: string) =>
    [...keys.files(projectId, sessionId), "file", path] as const,
  /** A project's `/name` commands, as of a session's branch (`sessionId` "" for the default). */
  commands: (projectId: string, sessionId: string) =>
    ["projects", projectId, "commands", sessionId] as const,
  /** A session with its branch and worktree state. */
  session: (sessionId: string) => ["sessions", sessionId] as const,
  /** A project's forge deliveries. */
  forgeEvents: (projectId: string) => ["projects", projectId, "forge-events"] as const,
  webhooks: ["webhooks"] as const,
  deliveries: (webhookId: string) => ["webhooks", webhookId, "deliveries"] as const,
};

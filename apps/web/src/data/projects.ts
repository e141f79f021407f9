// Projects through the query cache: the list (one project is read out of it), adding, changing,
// deleting and cloning one, its sessions, and its files on a drone (a directory, a file, a write).
import type {
  ChatSession,
  CreateProjectBody,
  CreateSessionBody,
  Project,
  UpdateProjectBody,
} from "@gadget/protocol";
import { queryOptions, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ApiError } from "../api/api-error.ts";
import type { ApiClient } from "../api/client.ts";
import { useApi } from "../app/auth.tsx";
import { keys } from "./keys.ts";

const projectsQuery = (api: ApiClient) =>
  queryOptions({
    queryKey: keys.projects,
    queryFn: async () => (await api.listProjects()).projects,
  });

export function useProjects() {
  return useQuery(projectsQuery(useApi()));
}

/** One project out of the list (null once the list is read without it). */
export function useProject(projectId: string) {
  return useQuery({
    ...projectsQuery(useApi()),
    select: (projects) => projects.find((item) => item._id === projectId) ?? null,
  });
}

export function useCreateProject() {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: CreateProjectBody) => api.createProject(body),
    onSuccess: ({ project }) =>
      client.setQueryData<Project[]>(keys.projects, (projects) =>
        projects ? [...projects, project] : projects,
      ),
  });
}

export function useUpdateProject(projectId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (body: UpdateProjectBody) =>
      (await api.updateProject(projectId, body)).project,
    onSuccess: (project) =>
      client.setQueryData<Project[]>(keys.projects, (projects) =>
        projects?.map((item) => (item._id === project._id ? project : item)),
      ),
  });
}

export function useDeleteProject(projectId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => api.deleteProject(projectId),
    onSuccess: () => {
      client.setQueryData<Project[]>(keys.projects, (projects) =>
        projects?.filter((item) => item._id !== projectId),
      );
      // Its sessions and files went with it.
      client.removeQueries({ queryKey: [...keys.projects, projectId] });
    },
  });
}

/** "Clone now": the default branch's checkout changes, so its directories are read again. */
export function useCloneProject(projectId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => api.cloneProject(projectId),
    onSuccess: () => client.invalidateQueries({ queryKey: keys.directories(projectId, "") }),
  });
}

export function useSessions(projectId: string) {
  const api = useApi();
  return useQuery({
    queryKey: keys.sessions(projectId),
    queryFn: async () => (await api.listSessions(projectId)).sessions,
  });
}

export function useCreateSession(projectId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (body: CreateSessionBody) =>
      (await api.createSession(projectId, body)).session,
    onSuccess: (session) =>
      client.setQueryData<ChatSession[]>(keys.sessions(projectId), (sessions) =>
        sessions ? [...sessions, session] : sessions,
      ),
  });
}

/** Where a project's files are read: its default branch (`sessionId` "") or a session's worktree. */
export interface FilesOf {
  projectId: string;
  sessionId: string;
}

/** How often a listing no drone could answer is asked again while it is shown. */
const droneAwayRelistMs = 5_000;

/** Whether no drone could answer a listing: none online, none with a checkout, none in time. */
export function isDroneAway(error: unknown): error is ApiError {
  return error instanceof ApiError && error.code === "no_drone_online";
}

/**
 * One directory's entries, as the drone lists them. While no drone can answer, it is listed again
 * every few seconds: the files show once a drone comes online, clones the project or answers.
 */
export function useDirectory({ projectId, sessionId }: FilesOf, path: string) {
  const api = useApi();
  return useQuery({
    queryKey: keys.directory(projectId, sessionId, path),
    queryFn: () => api.listFiles(projectId, path, sessionId || undefined),
    refetchInterval: (query) => (isDroneAway(query.state.error) ? droneAwayRelistMs : false),
  });
}

/**
 * One file's content and sha. Not read again on its own while open: the editor holds the user's
 * edits, and a stale save answers 409 (a conflict to resolve) rather than losing them.
 */
export function useFile({ projectId, sessionId }: FilesOf, path: string) {
  const api = useApi();
  return useQuery({
    queryKey: keys.file(projectId, sessionId, path),
    queryFn: () => api.readFile(projectId, path, sessionId || undefined),
    refetchOnWindowFocus: false,
    refetchOnReconnect: false,
  });
}

/**
 * Writes a file of a session's worktree. `overwrite` saves over the drone's current copy: its
 * sha is read first, so the write is still a checked one.
 */
export function useWriteFile({ projectId, sessionId }: FilesOf, path: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async ({ content, baseSha }: { content: string; baseSha: string | "current" }) => {
      const sha =
        baseSha === "current"
          ? (await api.readFile(projectId, path, sessionId || undefined)).sha
          : baseSha;
      const answer = await api.writeFile(projectId, {
        path,
        content,
        ...(sha ? { baseSha: sha } : {}),
        ...(sessionId ? { sessionId } : {}),
      });
      return { path, content, sha: answer.sha };
    },
    onSuccess: (file) => client.setQueryData(keys.file(projectId, sessionId, path), file),
  });
}

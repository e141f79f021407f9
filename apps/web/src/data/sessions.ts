// One chat session through the query cache: its detail (branch, worktree, pull request), changing
// and deleting it, "Deliver now", and the `/name` commands of its branch. Its turns are live (live/session-turns.ts), not cached here.
import type { ChatSession, SessionDetail, UpdateSessionBody } from "@gadget/protocol";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../app/auth.tsx";
import { keys } from "./keys.ts";

export function useSession(sessionId: string) {
  const api = useApi();
  return useQuery({
    queryKey: keys.session(sessionId),
    queryFn: async () => (await api.getSession(sessionId)).session,
    // No worktree state: its drone is offline or did not answer in time (busy); ask again.
    refetchInterval: (query) =>
      query.state.data?.branch && !query.state.data.worktree ? 5_000 : false,
  });
}

/**
 * The project's commands as of the session's branch, for the composer's `/` list. A drone must
 * hold the project: until one answers the list is empty (the prompt still goes out as typed).
 */
export function useSessionCommands(projectId: string, sessionId: string) {
  const api = useApi();
  return useQuery({
    queryKey: keys.commands(projectId, sessionId),
    queryFn: async () => (await api.projectCommands(projectId, sessionId)).commands,
    staleTime: 60_000,
    retry: false,
  });
}

export function useUpdateSession(sessionId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (body: UpdateSessionBody) =>
      (await api.updateSession(sessionId, body)).session,
    onSuccess: (session) => {
      client.setQueryData<SessionDetail>(keys.session(sessionId), (current) =>
        current ? { ...current, ...session } : current,
      );
      client.setQueryData<ChatSession[]>(keys.sessions(session.project), (sessions) =>
        sessions?.map((item) => (item._id === session._id ? session : item)),
      );
    },
  });
}

export function useDeleteSession(projectId: string, sessionId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => api.deleteSession(sessionId),
    onSuccess: () => {
      client.setQueryData<ChatSession[]>(keys.sessions(projectId), (sessions) =>
        sessions?.filter((item) => item._id !== sessionId),
      );
      client.removeQueries({ queryKey: keys.session(sessionId) });
      // Its worktree's files are gone from the "Files of" choice.
      client.removeQueries({ queryKey: keys.files(projectId, sessionId) });
    },
  });
}

/** Commits the worktree's uncommitted changes and pushes the branch; the branch state moves. */
export function useDeliverSession(sessionId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async () => (await api.deliverSession(sessionId)).delivery,
    onSuccess: () => client.invalidateQueries({ queryKey: keys.session(sessionId) }),
  });
}

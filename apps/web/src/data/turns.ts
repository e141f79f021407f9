// What a session's page does to its turns, as mutations: cancel, resume, an approval, revert, a
// queued turn's edit, a steering message, rewind, fork, resend and a new turn. The turns themselves
// are live (live/session-turns.ts), not cached: a mutation hands the turn the server answered to
// the page's live list, and invalidates what else it changed (the session's branch, its list).
import type { ChatSession, CreateTurnBody } from "@gadget/protocol";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useApi } from "../app/auth.tsx";
import type { SessionTurns } from "../live/session-turns.ts";
import { keys } from "./keys.ts";

/** The page's live turns: a turn the server answered is shown at once; a rewind reads them all. */
type LiveTurns = Pick<SessionTurns, "upsert" | "load">;

export function useCancelTurn() {
  const api = useApi();
  return useMutation({ mutationFn: (turnId: string) => api.cancelTurn(turnId) });
}

/** Resumes an interrupted turn, then shows it as the server has it now. */
export function useResumeTurn(turns: LiveTurns) {
  const api = useApi();
  return useMutation({
    mutationFn: async (turnId: string) => {
      await api.resumeTurn(turnId);
      return (await api.getTurn(turnId)).turn;
    },
    onSuccess: (turn) => void turns.upsert(turn),
  });
}

export interface ApprovalAnswer {
  turnId: string;
  approvalId: string;
  approve: boolean;
  /** Approve, and let the session run this exact command without asking again. */
  alwaysAllow?: boolean | undefined;
  /** What goes with the decision: a budget's `{extendBy}`. */
  input?: { extendBy: number } | undefined;
}

export function useDecideApproval(sessionId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: (answer: ApprovalAnswer) =>
      api.decideApproval(
        answer.turnId,
        answer.approvalId,
        answer.approve,
        answer.alwaysAllow,
        answer.input,
      ),
    // The session now lists the command; its settings show it.
    onSuccess: (_none, answer) => {
      if (answer.alwaysAllow) void client.invalidateQueries({ queryKey: keys.session(sessionId) });
    },
  });
}

/** Undoes a finished turn's changes with a revert commit; answers what the revert did. */
export function useRevertTurn(turns: LiveTurns) {
  const api = useApi();
  return useMutation({
    mutationFn: (turnId: string) => api.revertTurn(turnId),
    onSuccess: (answer) => void turns.upsert(answer.turn),
  });
}

/** A queued turn's new prompt (the server answers 409 once it started). */
export function useEditTurn(turns: LiveTurns) {
  const api = useApi();
  return useMutation({
    mutationFn: ({ turnId, prompt }: { turnId: string; prompt: string }) =>
      api.editTurn(turnId, prompt),
    onSuccess: ({ turn }) => void turns.upsert(turn),
  });
}

/** A message to a running turn; `interrupt` stops what is in flight first. */
export function useSteerTurn() {
  const api = useApi();
  return useMutation({
    mutationFn: async (message: { turnId: string; text: string; interrupt: boolean }) => {
      await api.steerTurn(message.turnId, message.text, message.interrupt);
    },
  });
}

/**
 * Takes back a turn and the ones after it, code and conversation (the old state stays in git
 * under refs/gadget/rewound/…), then reads the turns and the session's branch again.
 */
export function useRewindSession(sessionId: string, turns: LiveTurns) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: (turnId: string) => api.rewindSession(sessionId, turnId, true),
    onSuccess: async () => {
      await turns.load();
      void client.invalidateQueries({ queryKey: keys.session(sessionId) });
    },
  });
}

/** A new session with this one's turns up to `turnId`, listed with the project's sessions. */
export function useForkSession(projectId: string, sessionId: string) {
  const api = useApi();
  const client = useQueryClient();
  return useMutation({
    mutationFn: async (turnId: string) => (await api.forkSession(sessionId, turnId)).session,
    onSuccess: (forked) => {
      client.setQueryData<ChatSession[]>(keys.sessions(projectId), (sessions) =>
        sessions ? [...sessions, forked] : sessions,
      );
    },
  });
}

/** The session's last turn taken back and its prompt, edited, sent again as a new turn. */
export function useResendTurn(sessionId: string, turns: LiveTurns) {
  const api = useApi();
  return useMutation({
    mutationFn: async (resend: { turnId: string; prompt: string; providerId: string }) => {
      await api.rewindSession(sessionId, resend.turnId, true);
      await api.createTurn(sessionId, { prompt: resend.prompt, providerId: resend.providerId });
    },
    onSuccess: () => turns.load(),
  });
}

/** A new turn of the session, shown at once. */
export function useCreateTurn(sessionId: string, turns: LiveTurns) {
  const api = useApi();
  return useMutation({
    mutationFn: async (body: CreateTurnBody) => (await api.createTurn(sessionId, body)).turn,
    onSuccess: (turn) => void turns.upsert(turn),
  });
}

// The user's sign-ins through the query cache, and revoking one.
import type { SignIn } from "@gadget/protocol";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ApiError } from "../api/api-error.ts";
import { useApi } from "../app/auth.tsx";
import { keys } from "./keys.ts";

export function useSignIns() {
  const api = useApi();
  return useQuery({
    queryKey: keys.signIns,
    queryFn: async () => (await api.listSignIns()).signIns,
  });
}

/**
 * Revokes a sign-in; its row goes, also when it was already gone (404: it expired, or was revoked
 * elsewhere), which is still shown as an error. `onRevokedHere` runs for this browser's own.
 */
export function useRevokeSignIn(onRevokedHere: () => void) {
  const api = useApi();
  const client = useQueryClient();
  const drop = (signIn: SignIn) =>
    client.setQueryData<SignIn[]>(keys.signIns, (signIns) =>
      signIns?.filter((item) => item.id !== signIn.id),
    );
  return useMutation({
    mutationFn: (signIn: SignIn) => api.revokeSignIn(signIn.id),
    onSuccess: (_answer, signIn) => {
      // This browser's token no longer works: it is forgotten here, as logging out does.
      if (signIn.current) onRevokedHere();
      else drop(signIn);
    },
    onError: (error, signIn) => {
      if (error instanceof ApiError && error.status === 404) drop(signIn);
    },
  });
}

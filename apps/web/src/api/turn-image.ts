// An image sent with a turn's prompt (`GET /api/turns/:id/images/:imageId`): bytes, not JSON, so
// read beside the JSON client, with its token, and handed back as a `data:` URL.
import { dataUrlOf } from "../lib/data-url.ts";
import { errorFromResponse, toApiError } from "./api-error.ts";
import type { ApiClient } from "./client.ts";

/** The image as a `data:` URL; throws the server's error (404 for another user's turn). */
export async function fetchTurnImage(
  api: ApiClient,
  turnId: string,
  imageId: string,
): Promise<string> {
  const token = api.getToken();
  let response: Response;
  try {
    response = await fetch(`${api.baseUrl}/api/turns/${turnId}/images/${imageId}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw toApiError(error);
  }
  if (!response.ok)
    throw errorFromResponse(response.status, await response.json().catch(() => undefined));
  return dataUrlOf(await response.blob());
}

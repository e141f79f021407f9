// The images a turn's prompt was sent with, under the prompt: each read once (with the user's
// token) and shown as a data: URL, since the IDE's CSP allows no other image source but its own.
import type { TurnImage } from "@gadget/protocol";
import { formatBytes } from "@gadget/protocol";
import { useQuery } from "@tanstack/react-query";
import { fetchTurnImage } from "../api/turn-image.ts";
import { useApi } from "../app/auth.tsx";

function Thumbnail({ turnId, image }: { turnId: string; image: TurnImage }) {
  const api = useApi();
  const source = useQuery({
    queryKey: ["turn-image", turnId, image._id],
    queryFn: () => fetchTurnImage(api, turnId, image._id),
    staleTime: Number.POSITIVE_INFINITY,
  });
  const name = image.name ?? "image";
  return (
    <li>
      {source.data ? (
        <img src={source.data} alt={name} width={64} height={64} />
      ) : (
        <span className="muted small">{source.isError ? "not loaded" : "loading…"}</span>
      )}
      <span className="small muted">
        {name} · {formatBytes(image.size)}
      </span>
    </li>
  );
}

/** The prompt's images, or nothing. */
export function TurnImages({ turnId, images }: { turnId: string; images?: TurnImage[] }) {
  if (!images?.length) return null;
  return (
    <ul className="turn-images" aria-label="Images sent with the prompt">
      {images.map((image) => (
        <Thumbnail key={image._id} turnId={turnId} image={image} />
      ))}
    </ul>
  );
}

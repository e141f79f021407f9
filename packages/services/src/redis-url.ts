// What REDIS_URL names: one Redis, a Redis Cluster (several seed nodes) or a Sentinel-watched
// master (docs/configuration.md). Here, beside the shared environment schema, so `pnpm start` and
// the server read it alike; the server makes its clients from the result (apps/server/src/redis).

export interface RedisNode {
  host: string;
  port: number;
}

interface Credentials {
  username: string | undefined;
  password: string | undefined;
  /** `rediss`: TLS to every node. */
  tls: boolean;
}

export type RedisTarget =
  | ({ kind: "single"; url: string } & Credentials)
  | ({ kind: "cluster"; nodes: RedisNode[] } & Credentials)
  | ({ kind: "sentinel"; sentinels: RedisNode[]; masterName: string; db: number } & Credentials);

const form = /^(rediss?)(\+(cluster|sentinel))?:\/\/(?:([^@/]*)@)?([^/?#]+)(\/[^?#]*)?$/;

/** A REDIS_URL that does not say where Redis is (the server answers it as `invalid_environment`). */
export class RedisUrlError extends Error {
  override name = "RedisUrlError";
}

const invalid = (message: string) => new RedisUrlError(message);

/** What REDIS_URL may be, in the words every refusal uses. */
export const redisUrlForms =
  "must be redis://host:port, a list redis://host:port,host:port (Redis Cluster) or redis+sentinel://host:port,…/mastername";

/**
 * Reads REDIS_URL. `redis://host:port` is one Redis; several hosts separated by commas
 * (`redis://a:7000,b:7001`) or `redis+cluster://` are a Redis Cluster's seed nodes;
 * `redis+sentinel://host:26379,host:26380/mymaster` is the master `mymaster` that those
 * Sentinels watch. `rediss` asks for TLS; `user:password@` before the hosts is the nodes' login.
 * @example parseRedisUrl("redis+sentinel://127.0.0.1:26379/mymaster").kind === "sentinel"
 */
export function parseRedisUrl(url: string): RedisTarget {
  const match = form.exec(url);
  if (!match) {
    throw invalid(redisUrlForms);
  }
  const [, scheme, , mode, login, hostList, path = ""] = match;
  const credentials = readLogin(login, scheme === "rediss");
  const nodes = hostList!.split(",").map((part) => parseNode(part, mode === "sentinel"));
  if (mode === "sentinel") {
    const [masterName, db = "0", ...rest] = path.split("/").filter(Boolean);
    if (!masterName || rest.length > 0 || !/^\d+$/.test(db)) {
      throw invalid("a Sentinel URL ends in /mastername (or /mastername/db)");
    }
    return { kind: "sentinel", sentinels: nodes, masterName, db: Number(db), ...credentials };
  }
  if (mode === "cluster" || nodes.length > 1) {
    if (path !== "" && path !== "/") {
      throw invalid("a Redis Cluster has only database 0: no /db after its nodes");
    }
    return { kind: "cluster", nodes, ...credentials };
  }
  return { kind: "single", url, ...credentials };
}

function readLogin(login: string | undefined, tls: boolean): Credentials {
  if (!login) return { username: undefined, password: undefined, tls };
  const colon = login.indexOf(":");
  const username = decodeURIComponent(colon < 0 ? login : login.slice(0, colon));
  const password = colon < 0 ? undefined : decodeURIComponent(login.slice(colon + 1));
  return { username: username || undefined, password, tls };
}

function parseNode(text: string, sentinel: boolean): RedisNode {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(text.trim());
  const port = Number(match?.[2] ?? (sentinel ? 26379 : 6379));
  if (!match || port < 1 || port > 65535) {
    throw invalid(`"${text}" is not host:port`);
  }
  return { host: match[1]!.replace(/^\[|\]$/g, ""), port };
}

/** Every address REDIS_URL names: the one Redis, the seed nodes or the Sentinels. */
export function redisAddresses(target: RedisTarget): RedisNode[] {
  if (target.kind === "cluster") return target.nodes;
  if (target.kind === "sentinel") return target.sentinels;
  const { hostname, port } = new URL(target.url);
  return [{ host: hostname.replace(/^\[|\]$/g, ""), port: Number(port || 6379) }];
}

/** The URL with its password left out, for logs and error messages. */
export function redactRedisUrl(url: string): string {
  return url.replace(/^([^:]+:\/\/)([^@/]*:)[^@/]*@/, "$1$2***@");
}

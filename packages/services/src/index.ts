// @gadget/services: the service harness used by tests, `pnpm services:up` and `pnpm start`.
export {
  environmentProblems,
  portSchema,
  sharedDefaults,
  sharedEnvironmentSchema,
} from "./environment.ts";
export { ensureFerretdb, ferretdbBinaryPath } from "./ferretdb.ts";
export { type GiteaOptions, type RunningGitea, startGitea } from "./gitea.ts";
export { builtGitea, ensureGitea, type GiteaBuild, giteaBuildPaths } from "./gitea-build.ts";
export {
  type GiteaAnswer,
  GiteaClient,
  type GiteaPermission,
  type GiteaRepository,
  type GiteaUser,
  type RepositoryOptions,
} from "./gitea-client.ts";
export { startReaper } from "./reaper.ts";
export {
  type RedisCluster,
  type RedisProcess,
  type RedisSentinelSetup,
  type RedisTopology,
  startRedisCluster,
  startRedisSentinel,
} from "./redis-topologies.ts";
export {
  parseRedisUrl,
  type RedisNode,
  type RedisTarget,
  RedisUrlError,
  redactRedisUrl,
  redisAddresses,
  redisUrlForms,
} from "./redis-url.ts";
export { findRepoRoot } from "./repo-root.ts";
export {
  type RestartableService,
  startRestartableMongo,
  startRestartableRedis,
} from "./restartable.ts";
export {
  databaseUrl,
  type MongoKind,
  type RedisKind,
  type RunningServices,
  type ServicesOptions,
  startServices,
  stopChild,
  stopPids,
} from "./services.ts";
export { freePort, pingMongo, pingRedis, stablePort, waitUntil } from "./wire.ts";

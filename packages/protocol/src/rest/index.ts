// The REST contract: every route of the server, by resource. The server serves exactly these
// (apps/server/src/http), and the web app and the tests' clients call them by name.
import { accountRoutes } from "./accounts.ts";
import { downloadRoutes } from "./downloads.ts";
import { droneRoutes } from "./drones.ts";
import { fileRoutes } from "./files.ts";
import { forgeEventRoutes } from "./forge-events.ts";
import { healthRoutes } from "./health.ts";
import { projectRoutes } from "./projects.ts";
import { providerRoutes } from "./providers.ts";
import type { RouteContract } from "./route.ts";
import { sessionRoutes } from "./sessions.ts";
import { turnRoutes } from "./turns.ts";
import { webhookRoutes } from "./webhooks.ts";

export {
  type DronePackageInfo,
  dronePackageFileSchema,
  dronePackageInfoSchema,
} from "./downloads.ts";
export {
  type RegistrationToken,
  type RegistrationTokenStatus,
  registrationTokenSchema,
  registrationTokenStatusSchema,
} from "./drones.ts";
export { type Readiness, readinessSchema } from "./health.ts";
export * from "./route.ts";

/**
 * Every route, by resource.
 * @example const url = routeUrl(rest.projects.sessions, { params: { id: projectId } });
 */
export const rest = {
  health: healthRoutes,
  accounts: accountRoutes,
  drones: droneRoutes,
  downloads: downloadRoutes,
  providers: providerRoutes,
  projects: projectRoutes,
  files: fileRoutes,
  sessions: sessionRoutes,
  turns: turnRoutes,
  webhooks: webhookRoutes,
  forgeEvents: forgeEventRoutes,
};

/** Every route as one list (the server checks it serves each one exactly once). */
export const restRoutes: RouteContract[] = Object.values(rest).flatMap((routes) =>
  Object.values(routes),
);

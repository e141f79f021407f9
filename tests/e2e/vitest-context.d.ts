// What the root vitest global setup provides to tests (see packages/services).
import "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    mongoUrl: string;
    redisUrl: string;
  }
}

// The values the root vitest global setup provides to integration tests.
import "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    mongoUrl: string;
    redisUrl: string;
  }
}

// Runs in every test file of every project (vitest.config.ts `setupFiles`): what the file made
// with makeTempDir is removed once its tests and their own afterAll hooks are done.
import { afterAll } from "vitest";
import { removeTempDirs } from "./temp-dirs.ts";

afterAll(removeTempDirs);

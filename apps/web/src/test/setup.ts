// Test setup for the jsdom project: DOM matchers and a clean DOM after each test.
import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { afterEach } from "vitest";

afterEach(() => {
  // Node-environment files (e2e) have no DOM to clean.
  if (typeof document !== "undefined") cleanup();
});

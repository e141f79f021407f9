// Test setup for the jsdom project: DOM matchers, a clean DOM after each test, and waits long
// enough for a loaded CI machine.
import "@testing-library/jest-dom/vitest";
import { cleanup, configure } from "@testing-library/react";
import { afterEach } from "vitest";

// findBy…/waitFor give up after 1 s by default; with the whole suite on two cores a render can
// take longer (a component test once failed only in a full run). They still end at the first pass.
configure({ asyncUtilTimeout: 5_000 });

afterEach(() => {
  // Node-environment files (e2e) have no DOM to clean.
  if (typeof document !== "undefined") cleanup();
});

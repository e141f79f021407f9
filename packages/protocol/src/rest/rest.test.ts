// The REST contract holds together: each route once, params named as in its path, and URLs built
// as the server reads them.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { rest, restRoutes, routeUrl } from "./index.ts";

describe("the REST contract", () => {
  it("declares each method and path once", () => {
    const keys = restRoutes.map((route) => `${route.method} ${route.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe(68);
  });

  it("gives every :name of a path a params schema with that key, and nothing else", () => {
    for (const route of restRoutes) {
      const names = [...route.path.matchAll(/:(\w+)/g)].map((match) => match[1]);
      const shape = route.params instanceof z.ZodObject ? Object.keys(route.params.shape) : [];
      expect(shape.sort(), `${route.method} ${route.path}`).toEqual(names.sort());
    }
  });

  it("answers a path id of the wrong shape as not found, and stores ids in lower case", () => {
    const params = rest.turns.get.params;
    expect(params.safeParse({ id: "../../etc" }).error?.issues[0]?.message).toBe("Turn not found");
    expect(params.parse({ id: "ABCDEF0123456789ABCDEF01" })).toEqual({
      id: "abcdef0123456789abcdef01",
    });
  });

  it("reads a left-out body as {}, so an empty PATCH or POST is valid", () => {
    expect(rest.projects.update.body.parse(undefined)).toEqual({});
    expect(rest.drones.createRegistrationToken.body.parse(null)).toEqual({ reusable: false });
  });

  it("builds URLs with encoded params, the query in order, lists comma-separated", () => {
    expect(
      routeUrl(rest.files.list, {
        params: { id: "p/1" },
        query: { path: "src/a b.ts", session: undefined },
      }),
    ).toBe("/api/projects/p%2F1/files?path=src%2Fa+b.ts");
    expect(routeUrl(rest.turns.list, { query: { status: ["queued", "processing"] } })).toBe(
      "/api/turns?status=queued%2Cprocessing",
    );
    expect(() => routeUrl(rest.turns.get, {})).toThrow("/api/turns/:id needs :id");
  });
});

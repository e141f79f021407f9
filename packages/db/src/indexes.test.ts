// The patched FerretDB test server pushes filters on indexed fields down to SQLite, which is
// exact only for fields that never hold an array (tools/ferretdb/patches/…/sqlite/collection.go).
// MongoDB matches {f: v} when f is an array containing v; the pushdown would miss that document.
import mongoose from "mongoose";
import { describe, expect, it } from "vitest";
import { createModels } from "./database.ts";

describe("model indexes", () => {
  it("index no field that holds an array (the test server's pushdown relies on it)", () => {
    const models = createModels(mongoose.createConnection());
    const arrays: string[] = [];
    for (const model of Object.values(models)) {
      const schema = model.schema as unknown as mongoose.Schema;
      // schema.indexes() also lists fields declared `index` or `unique` on their path.
      for (const [fields] of schema.indexes()) {
        for (const field of Object.keys(fields)) {
          const type = schema.path(field) as mongoose.SchemaType | undefined;
          if (!type) arrays.push(`${model.modelName}.${field} (not in the schema)`);
          else if (type.instance === "Array") arrays.push(`${model.modelName}.${field}`);
        }
      }
    }
    expect(arrays).toEqual([]);
    // Not vacuous: the models do index fields.
    expect(Object.values(models).flatMap((model) => model.schema.indexes()).length).toBeGreaterThan(
      5,
    );
  });
});

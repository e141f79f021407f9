// Loaded into a benchmarked server process (`--import`): counts the database operations it sends
// (every call of the driver's collection methods, by method) and writes the totals to
// `$BENCH_COUNTS_DIR/<pid>.json` every 200 ms, so the cost curve can say operations per event.
// Benchmark-only: nothing in src loads it.
import { renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const directory = process.env.BENCH_COUNTS_DIR;
if (directory) {
  // The driver the server's mongoose uses (resolved from the server's own directory).
  const require = createRequire(path.join(process.cwd(), "package.json"));
  const mongodb = require(require.resolve("mongodb", { paths: [require.resolve("mongoose")] }));
  const counts: Record<string, number> = {};
  let nested = false;
  const prototype = mongodb.Collection.prototype as Record<string, (...args: unknown[]) => unknown>;
  for (const method of [
    "find",
    "findOne",
    "aggregate",
    "countDocuments",
    "insertOne",
    "insertMany",
    "updateOne",
    "updateMany",
    "replaceOne",
    "findOneAndUpdate",
    "findOneAndDelete",
    "deleteOne",
    "deleteMany",
    "bulkWrite",
  ]) {
    const original = prototype[method];
    if (!original) continue;
    prototype[method] = function (this: unknown, ...args: unknown[]) {
      // The driver's own calls inside one of these (its insertMany calls bulkWrite before its
      // first await) are the same command: counted once, as the caller's method.
      if (nested) return original.apply(this, args);
      counts[method] = (counts[method] ?? 0) + 1;
      nested = true;
      try {
        return original.apply(this, args);
      } finally {
        nested = false;
      }
    };
  }
  setInterval(() => {
    // Written aside and renamed: the bench never reads half a file.
    const aside = path.join(directory, `${process.pid}.partial`);
    writeFileSync(aside, JSON.stringify(counts));
    renameSync(aside, path.join(directory, `${process.pid}.json`));
  }, 200).unref();
}

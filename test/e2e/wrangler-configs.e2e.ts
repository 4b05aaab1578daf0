import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { QUEUES } from "../../src/worker/query/queues";
import { WEBHOOK_QUEUE_NAME } from "../../src/worker/webhooks/completion";

const ROOT = join(import.meta.dirname, "../..");
const api = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
const engine = readFileSync(join(ROOT, "wrangler.engine.toml"), "utf8");
const store = readFileSync(join(ROOT, "wrangler.store.toml"), "utf8");

/** The value of `key = …` in the first table named `table`, or before any table for "" (flat TOML, as both are). */
function valueIn(toml: string, table: string, key: string): string | undefined {
  const parts = toml.split(/^\[/m);
  const section = table === "" ? parts[0] : parts.find((part) => part.startsWith(`${table}]`));
  return section?.match(new RegExp(`^${key}\\s*=\\s*"?([^"\\n]*)"?`, "m"))?.[1];
}

/** The queues of a configuration's [[queues.producers]] or [[queues.consumers]] tables (of an environment), in order. */
function queues(toml: string, kind: "producers" | "consumers", env = ""): string[] {
  return toml
    .split(/^(?=\[)/m)
    .filter((section) => section.startsWith(`[[${env ? `env.${env}.` : ""}queues.${kind}]]`))
    .map((section) => section.match(/^queue = "([^"]+)"/m)?.[1] ?? "");
}

/** script_name of the [[durable_objects.bindings]] table naming `binding` (of an environment), or undefined. */
function scriptOf(toml: string, binding: string, env = ""): string | undefined {
  const section = toml
    .split(/^(?=\[)/m)
    .find(
      (part) =>
        part.startsWith(`[[${env ? `env.${env}.` : ""}durable_objects.bindings]]`) &&
        part.includes(`name = "${binding}"`),
    );
  return section?.match(/^script_name = "([^"]+)"/m)?.[1];
}

describe("the three Workers' configurations", () => {
  it("should give the table store Worker a CPU limit of the query time limit plus 10 s, which resets a store held past it", () => {
    const timeLimitMs = Number(valueIn(api, "vars", "QUERY_TIME_LIMIT_SECONDS")) * 1000;

    expect(Number(valueIn(store, "limits", "cpu_ms"))).toBe(timeLimitMs + 10_000);
  });

  it("should host the table stores in their own Worker, which the API and the engine bind to", () => {
    expect(valueIn(store, "", "name")).toBe("dqs-store");
    expect(scriptOf(store, "TABLE_STORE")).toBeUndefined();
    expect(scriptOf(api, "TABLE_STORE")).toBe("dqs-store");
    expect(scriptOf(engine, "TABLE_STORE")).toBe("dqs-store");
    expect(scriptOf(store, "QUERY_STATE")).toBe(valueIn(api, "", "name"));
    expect(valueIn(store, "[r2_buckets]", "bucket_name")).toBe(valueIn(api, "[r2_buckets]", "bucket_name"));
    expect(store).not.toMatch(/^\[vars\]/m);
  });

  it("should give the engine a CPU limit above the API's query time limit, with a margin", () => {
    const timeLimitMs = Number(valueIn(api, "vars", "QUERY_TIME_LIMIT_SECONDS")) * 1000;
    const cpuMs = Number(valueIn(engine, "limits", "cpu_ms"));

    expect(timeLimitMs).toBeGreaterThan(0);
    expect(cpuMs).toBeGreaterThanOrEqual(timeLimitMs + 10_000);
  });

  it("should keep every setting in the API Worker: the engine has none to drift", () => {
    expect(engine).not.toMatch(/^\[vars\]/m);
  });

  it("should bind the engine to the API's database, bucket, queue and query state", () => {
    expect(valueIn(engine, "[d1_databases]", "database_name")).toBe(valueIn(api, "[d1_databases]", "database_name"));
    expect(valueIn(engine, "[r2_buckets]", "bucket_name")).toBe(valueIn(api, "[r2_buckets]", "bucket_name"));
    expect(queues(api, "producers")).toEqual(["dqs-queries", "dqs-queries-long", "dqs-builds", "dqs-webhooks"]);
    expect(scriptOf(engine, "QUERY_STATE")).toBe(valueIn(api, "", "name"));
  });

  it("should deploy the engine twice: the quick lane, which sends long queries on, and the long lane with the builds", () => {
    expect(queues(engine, "consumers")).toEqual(["dqs-queries", "dqs-queries-dlq"]);
    // The quick lane hands a long query to its QueryState object (the API Worker's), which sends it on.
    expect(queues(engine, "producers")).toEqual([]);
    const long = queues(engine, "consumers", "long");
    expect(long).toEqual(["dqs-queries-long", "dqs-builds", "dqs-builds-dlq"]);
    // The engine picks each batch's handler by these names (src/worker/query/queues.ts).
    expect([...queues(engine, "consumers"), ...long].sort()).toEqual(Object.values(QUEUES).sort());
    // An environment inherits no bindings: the long lane's are the quick lane's.
    for (const binding of ["QUERY_STATE", "TABLE_STORE"])
      expect(scriptOf(engine, binding, "long")).toBe(scriptOf(engine, binding));
    expect(valueIn(engine, "[env.long.d1_databases]", "database_name")).toBe(
      valueIn(api, "[d1_databases]", "database_name"),
    );
    expect(valueIn(engine, "[env.long.r2_buckets]", "bucket_name")).toBe(valueIn(api, "[r2_buckets]", "bucket_name"));
  });

  it("should have the API Worker consume only the completion webhooks, which its QueryState objects produce", () => {
    expect(queues(api, "consumers")).toEqual([WEBHOOK_QUEUE_NAME]);
  });
});

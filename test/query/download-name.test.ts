import { describe, expect, it } from "vitest";
import { resultFilename } from "../../src/worker/query/result/download-name";

const AT = "2026-03-04T05:06:07Z";

describe("the name a result is downloaded under", () => {
  it.each([
    [
      "SELECT * FROM dana.vega.`seattle-weather.csv` WHERE temp_max > 30",
      "csv",
      "seattle-weather-query-2026-03-04-050607.csv",
    ],
    ["SELECT count(*) FROM a.b.`events.csv.gz`", "parquet", "events-query-2026-03-04-050607.parquet"],
    ["SELECT * FROM a.b.orders o JOIN a.b.orders p ON o.id = p.id", "arrow", "orders-query-2026-03-04-050607.arrow"],
    ["SELECT * FROM a.b.orders JOIN a.b.targets USING (region)", "csv", "query-2026-03-04-050607.csv"],
    ["SELECT 1", "ndjson", "query-2026-03-04-050607.ndjson"],
    ["SELECT * FROM a.b.`bad-", "csv", "query-2026-03-04-050607.csv"],
  ])("should name %s after what it reads and when", (sql, extension, name) => {
    expect(resultFilename({ sql, createdAt: AT }, extension)).toBe(name);
  });
});

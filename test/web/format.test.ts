import { describe, expect, it } from "vitest";
import { countOf, queryTiming } from "../../src/web/console/format";

const AT = { CreatedAt: "2026-11-28T17:00:00Z", UpdatedAt: "2026-11-28T17:02:00Z", Reused: false };

describe("the console's figures", () => {
  it("should count one thing in the singular and more in the plural", () => {
    expect([countOf(0, "row"), countOf(1, "row"), countOf(2000, "row")]).toEqual(["0 rows", "1 row", "2,000 rows"]);
  });

  it("should tell a query's own run apart from its wait in the queue", () => {
    const waited = { ...AT, Timings: { QueueWaitMs: 115_000, LoadMs: 20, ExecuteMs: 90, WriteMs: 10 } };
    const prompt = { ...AT, Timings: { QueueWaitMs: 40, LoadMs: 20, ExecuteMs: 90, WriteMs: 10 } };

    expect(queryTiming(waited)).toBe("120 ms (after 1 min 55 s in the queue)");
    expect(queryTiming(prompt)).toBe("160 ms");
    expect(queryTiming({ ...waited, Reused: true })).toBe("reused");
  });
});

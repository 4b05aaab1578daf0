import { describe, expect, it } from "vitest";
import { extrapolateWork } from "../../../src/worker/query/engine/work-fit";

// The fit reads the work at the full size from runs at sample sizes; here the runs follow known curves.

const SIZES = [128, 512, 2048, 8192];
const FULL = 1_000_000;

function pointsOf(work: (n: number) => number) {
  return SIZES.map((rows) => ({ rows, steps: Math.round(work(rows)) }));
}

describe("fitting how work grows with the rows", () => {
  for (const [shape, work] of [
    ["a constant (a LIMIT)", () => 5_000],
    ["a scan", (n: number) => 40 + 12 * n],
    ["a sort", (n: number) => 9 * n * Math.log2(n)],
    ["a scan beside a join's matches, which only dominate in full", (n: number) => 8 * n + 0.002 * n * n],
    ["a join of three tables", (n: number) => 0.5 * n * n * n],
  ] as const)
    it(`should read ${shape} at the full size within 10%`, () => {
      const at = extrapolateWork(pointsOf(work), FULL);

      expect(at! / work(FULL)).toBeGreaterThan(0.9);
      expect(at! / work(FULL)).toBeLessThan(1.1);
    });

  it("should not fit fewer than three runs", () => {
    expect(extrapolateWork(pointsOf((n) => n).slice(0, 2), FULL)).toBeNull();
  });
});

/**
 * Fits how a statement's work grows with its rows, from runs on samples of
 * growing size, and reads the fit at the full size.
 *
 * A single power law through two samples misses work that is small on a
 * sample and large in full: a join whose matches grow with n² beside an
 * index build that grows with n log n reads as n¹ on samples of a few
 * thousand rows and is undercounted a hundredfold. So the work is fitted
 * as a sum of the terms a statement's plan is made of (a constant, n,
 * n log n, n², n³), each with a coefficient of zero or more, keeping the
 * smallest set of terms that fits the runs as well as any.
 */

/** One run: the rows of the largest table in it, and the steps it took. */
export interface WorkPoint {
  rows: number;
  steps: number;
}

const TERMS: ((n: number) => number)[] = [
  () => 1,
  (n) => n,
  (n) => n * Math.log2(Math.max(n, 2)),
  (n) => n * n,
  (n) => n * n * n,
];
/** A fit this close (the weighted errors, relative to all the steps) is as good as a closer one with more terms. */
const GOOD_ENOUGH = 0.01;

/**
 * The steps at `rows`, from a non-negative fit of at most one term fewer than
 * there are points (the rest measures the fit); null with fewer than three
 * points.
 */
export function extrapolateWork(points: WorkPoint[], rows: number): number | null {
  const usable = points.filter((point) => point.steps > 0);
  if (usable.length < 3) return null;
  const total = usable.reduce((sum, point) => sum + point.steps, 0);
  let best: { error: number; size: number; at: number } | null = null;
  for (const subset of subsets(TERMS.length, usable.length - 1)) {
    const coefficients = fitWeighted(usable, subset);
    if (!coefficients || coefficients.some((c) => c < 0)) continue;
    const predict = (n: number) => subset.reduce((sum, term, j) => sum + coefficients[j]! * TERMS[term]!(n), 0);
    const error = Math.sqrt(
      usable.reduce((sum, point) => sum + (predict(point.rows) - point.steps) ** 2 / point.steps, 0) / total,
    );
    const better =
      best === null ||
      Math.max(error, GOOD_ENOUGH) < Math.max(best.error, GOOD_ENOUGH) ||
      (Math.max(error, GOOD_ENOUGH) === Math.max(best.error, GOOD_ENOUGH) && subset.length < best.size);
    console.log(
      "FIT",
      subset.join(","),
      error.toFixed(4),
      coefficients.map((c) => c.toPrecision(3)).join(" "),
      predict(rows).toPrecision(3),
    );
    if (better) best = { error, size: subset.length, at: predict(rows) };
  }
  return best?.at ?? null;
}

/**
 * Least squares over the given terms, each run's error weighed by 1 / its
 * steps: a small sample's count varies more with which rows it drew, so it
 * counts for less (columns scaled for conditioning); null if singular.
 */
function fitWeighted(points: WorkPoint[], subset: number[]): number[] | null {
  const rows = points.map((point) => subset.map((term) => TERMS[term]!(point.rows) / Math.sqrt(point.steps)));
  const scale = subset.map((_, j) => Math.max(...rows.map((row) => Math.abs(row[j]!))) || 1);
  const a = rows.map((row) => row.map((value, j) => value / scale[j]!));
  const m = subset.length;
  const b = points.map((point) => Math.sqrt(point.steps));
  // Normal equations: (AᵀA) x = Aᵀb.
  const matrix = Array.from({ length: m }, (_, i) => [
    ...Array.from({ length: m }, (_, j) => a.reduce((sum, row) => sum + row[i]! * row[j]!, 0)),
    a.reduce((sum, row, k) => sum + row[i]! * b[k]!, 0),
  ]);
  const solved = solve(matrix);
  return solved && solved.map((x, j) => x / scale[j]!);
}

/** Gaussian elimination with partial pivoting on an augmented m × (m + 1) matrix. */
function solve(matrix: number[][]): number[] | null {
  const m = matrix.length;
  for (let col = 0; col < m; col++) {
    let pivot = col;
    for (let row = col + 1; row < m; row++)
      if (Math.abs(matrix[row]![col]!) > Math.abs(matrix[pivot]![col]!)) pivot = row;
    if (Math.abs(matrix[pivot]![col]!) < 1e-12) return null;
    [matrix[col], matrix[pivot]] = [matrix[pivot]!, matrix[col]!];
    for (let row = 0; row < m; row++) {
      if (row === col) continue;
      const factor = matrix[row]![col]! / matrix[col]![col]!;
      for (let k = col; k <= m; k++) matrix[row]![k]! -= factor * matrix[col]![k]!;
    }
  }
  return matrix.map((row, i) => row[m]! / row[i]!);
}

/** Every non-empty set of term indexes below `count`, of at most `most` terms, in increasing order. */
function subsets(count: number, most: number): number[][] {
  const all: number[][] = [];
  for (let mask = 1; mask < 1 << count; mask++) {
    const subset = Array.from({ length: count }, (_, i) => i).filter((i) => mask & (1 << i));
    if (subset.length <= most) all.push(subset);
  }
  return all;
}

import { describe, expect, it } from "vitest";
import { buildColumnImages } from "../../../src/worker/query/engine/build-images";
import { sqliteInstance } from "../../../src/worker/query/sqlite";
import { tableLayout } from "../../../src/worker/query/table-layout";
import { csvCell, runEngine, seededRandom, storedSchema, type MemoryItem } from "../../support/engine";

// Column images are read through views. When SQLite's plan would build an
// automatic index over such a view (a self-join, a join on a small table),
// the engine copies the views into tables first, inside SQLite. The answers
// must not change, in either case.

const COPYING = "Running: copying the column images into tables, for a better join plan.";

function sales(rows: number): MemoryItem {
  const random = seededRandom(7);
  const lines = ["id,category,amount"];
  for (let id = 1; id <= rows; id++) {
    const category = `c${Math.floor(random() * 12)}`;
    lines.push(`${id},${csvCell(category)},${(random() * 1000).toFixed(2)}`);
  }
  return {
    columns: [
      ["id", "INTEGER"],
      ["category", "STRING"],
      ["amount", "DOUBLE"],
    ],
    data: lines.join("\n") + "\n",
  };
}

const ITEMS = { "plans.set.sales": sales(3001) };
const SELF_JOIN =
  "SELECT a.category, count(*) FROM plans.set.sales a JOIN (SELECT category, max(amount) m FROM plans.set.sales GROUP BY category) b ON a.category = b.category AND a.amount > b.m * 0.9 GROUP BY 1 ORDER BY 1";

describe("join plans over column images", () => {
  it("should copy the views into tables for a self-join, and answer as the CSV path does", async () => {
    const csv = await runEngine(SELF_JOIN, ITEMS, { mode: "csv" });
    const images = await runEngine(SELF_JOIN, ITEMS, { mode: "images" });

    expect(images.outcome.ok && csv.outcome.ok).toBe(true);
    expect(images.control.messages).toContain(COPYING);
    expect(images.source.opened).toEqual([]);
    expect(images.csv).toBe(csv.csv);
    expect(images.csv.split("\n").length).toBe(12 + 2);
  });

  it("should keep the views for a query whose plan needs no automatic index", async () => {
    const sql = "SELECT category, count(*), sum(amount) FROM plans.set.sales GROUP BY category ORDER BY 1";

    const images = await runEngine(sql, ITEMS, { mode: "images" });

    expect(images.outcome.ok).toBe(true);
    expect(images.control.messages).not.toContain(COPYING);
    expect(images.csv).toBe((await runEngine(sql, ITEMS, { mode: "csv" })).csv);
  });

  it("should keep the views, and still answer, when the copies would not fit the memory budget", async () => {
    const first = await runEngine(SELF_JOIN, ITEMS, { mode: "images" });
    if (!first.outcome.ok) throw new Error(first.outcome.message);
    // Enough for the heap and the images once, not for copies beside them.
    const budget = first.outcome.peakMemoryBytes - 1;

    const tight = await runEngine(SELF_JOIN, ITEMS, { mode: "images", limits: { memoryBudgetBytes: budget } });

    if (!tight.outcome.ok) throw new Error(tight.outcome.message);
    expect(tight.control.messages).not.toContain(COPYING);
    expect(tight.csv).toBe(first.csv);
  });

  it("should number rows by rowid in file order, as a loaded table does", async () => {
    const sql = "SELECT rowid, id, _rowid_ = oid FROM plans.set.sales WHERE rowid IN (1, 2, 17, 3001) ORDER BY rowid";

    const images = await runEngine(sql, ITEMS, { mode: "images" });
    const csv = await runEngine(sql, ITEMS, { mode: "csv" });

    if (!images.outcome.ok) throw new Error(images.outcome.message);
    expect(images.control.messages).toContain(COPYING);
    expect(images.csv).toBe(csv.csv);
    expect(images.csv).toBe("rowid,id,_rowid_ = oid\n1,1,1\n2,2,1\n17,17,1\n3001,3001,1\n");
  });
});

describe("building column images", () => {
  it("should redo a pass that outgrows the memory budget as two, and build the same images", async () => {
    const item = sales(20_000);
    const bytes = new TextEncoder().encode(String(item.data));
    const build = async (budget: number) => {
      const images = new Map<number, number>();
      const outcome = await buildColumnImages(
        tableLayout(storedSchema(item)),
        { rows: 20_000, bytes: bytes.byteLength, name: "sales" },
        {
          open: async () => new Blob([bytes]).stream(),
          store: async (index, image) => void images.set(index, image.byteLength),
        },
        budget,
      );
      return { outcome, images };
    };

    const roomy = await build(1 << 30);
    // The estimate says all three columns fit one pass; the images do not, beside their largest copy.
    const tight = await build((await sqliteInstance()).heapBytes() + 420_000);

    expect(roomy.outcome).toMatchObject({ ok: true, passes: 1 });
    expect(tight.outcome.ok && tight.outcome.passes).toBeGreaterThan(1);
    expect([...tight.images]).toEqual([...roomy.images]);
  });
});

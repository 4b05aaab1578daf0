import { describe, expect, it } from "vitest";
import type { DataTypeName } from "../../../src/worker/ingest/value-types";
import { buildColumnImages, type ImageBuildOutcome } from "../../../src/worker/query/engine/build-images";
import {
  ColumnImageBuilder,
  estimateImageBytes,
  planPasses,
  VALUES_PER_RECORD,
} from "../../../src/worker/query/engine/column-images";
import { TransientError } from "../../../src/worker/query/run-limits";
import { tableLayout } from "../../../src/worker/query/table-layout";
import { sqliteInstance } from "../../../src/worker/query/sqlite";
import { gzip } from "../../support/catalog";
import { MemorySource, runEngine, storedSchema, type MemoryItem } from "../../support/engine";

// Column images at unit level: how a build is planned, what one image holds,
// how a file is built in passes, and how the engine reads images instead of
// the CSV (which columns it fetches, in which order rows come, and where it
// falls back to the CSV or stops).

const SQLITE_HEADER = "SQLite format 3\0";

function schemaOf(columns: [string, DataTypeName][]) {
  return tableLayout(storedSchema({ columns, data: "" }));
}

describe("planPasses", () => {
  it("should put every column in one pass when all estimates fit the budget together", () => {
    expect(planPasses([10, 20, 30], 60)).toEqual([[0, 1, 2]]);
  });

  it("should start a new pass when the next column would exceed the budget", () => {
    expect(planPasses([40, 40, 40, 40, 40], 100)).toEqual([[0, 1], [2, 3], [4]]);
  });

  it("should give a column larger than the budget a pass of its own", () => {
    expect(planPasses([10, 500, 10, 10], 100)).toEqual([[0], [1], [2, 3]]);
  });

  it("should plan no pass for no column", () => {
    expect(planPasses([], 100)).toEqual([]);
  });

  it("should keep every column exactly once, in schema order, within the budget unless alone", () => {
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
    for (let round = 0; round < 50; round++) {
      const estimates = Array.from({ length: 1 + (next() % 30) }, () => next() % 1000);
      const budget = 1 + (next() % 1500);

      const passes = planPasses(estimates, budget);

      expect(passes.flat()).toEqual(estimates.map((_, index) => index));
      for (const pass of passes) {
        const sum = pass.reduce((total, index) => total + estimates[index]!, 0);
        if (pass.length > 1) expect(sum).toBeLessThanOrEqual(budget);
      }
      // Greedy: a pass is only closed when its successor's first column would not have fitted.
      for (let i = 0; i + 1 < passes.length; i++) {
        const sum = passes[i]!.reduce((total, index) => total + estimates[index]!, 0);
        expect(sum + estimates[passes[i + 1]![0]!]!).toBeGreaterThan(budget);
      }
    }
  });
});

describe("estimateImageBytes", () => {
  const near = (actual: number, expected: number) => expect(Math.abs(actual - expected)).toBeLessThanOrEqual(1);

  it("should estimate fixed-width types from the row count alone", () => {
    const schema = schemaOf([
      ["i", "INTEGER"],
      ["d", "DOUBLE"],
      ["b", "BOOLEAN"],
      ["day", "DATE"],
    ]);
    const [i, d, b, day] = estimateImageBytes(schema, 1_000_000, 1000);

    // (bytes per value + 1 of record overhead) × rows × 1.1 of page slack
    near(i!, 11_000);
    near(d!, 11_000);
    near(b!, 3_300);
    near(day!, 13_200);
    // The file's size does not change them.
    expect(estimateImageBytes(schema, 10, 1000)).toEqual([i, d, b, day]);
  });

  it("should share what the fixed columns leave of a row among the variable-width ones", () => {
    const schema = schemaOf([
      ["id", "INTEGER"],
      ["name", "STRING"],
      ["at", "TIMESTAMP"],
    ]);

    // 49 bytes a row, 9 of them the integer: 20 for each text column.
    const [, name, at] = estimateImageBytes(schema, 49_000, 1000);

    near(name!, 1000 * 21 * 1.1);
    near(at!, 1000 * 21 * 1.1);
  });

  it("should assume at least 8 bytes for a variable-width value", () => {
    const [, name] = estimateImageBytes(
      schemaOf([
        ["id", "INTEGER"],
        ["name", "STRING"],
      ]),
      2000,
      1000,
    );

    near(name!, 1000 * 9 * 1.1);
  });

  it("should estimate nothing for a file without rows", () => {
    expect(
      estimateImageBytes(
        schemaOf([
          ["id", "INTEGER"],
          ["name", "STRING"],
        ]),
        12,
        0,
      ),
    ).toEqual([0, 0]);
  });
});

/** Builds one column's image from fields as the reader gives them: null for an unquoted empty one, "" for `""`. */
async function imageOf(type: DataTypeName, fields: (string | null)[]): Promise<Uint8Array> {
  const builder = new ColumnImageBuilder((await sqliteInstance()).sql, type);
  for (const field of fields) builder.add(field);
  return builder.finish();
}

/** The records of an image's table `c`, in rowid order, 64-bit integers as bigint. */
async function recordsOf(image: Uint8Array): Promise<unknown[][]> {
  const { Database } = (await sqliteInstance()).sql;
  const db = new Database(image);
  try {
    const statement = db.prepare("SELECT * FROM c ORDER BY rowid");
    const row = statement as unknown as { get(params: null, config: { useBigInt: boolean }): unknown[] };
    const records: unknown[][] = [];
    while (statement.step()) records.push(row.get(null, { useBigInt: true }));
    statement.free();
    return records;
  } finally {
    db.close();
  }
}

/** The declared types of an image's columns. */
async function declaredTypes(image: Uint8Array): Promise<string[]> {
  const { Database } = (await sqliteInstance()).sql;
  const db = new Database(image);
  try {
    return db.exec("PRAGMA table_info(c)")[0]!.values.map((row) => String(row[2]));
  } finally {
    db.close();
  }
}

describe("ColumnImageBuilder", () => {
  it("should store INTEGER values as 64-bit integers, beyond 2^53 and at both ends of the range, and empty fields as NULL", async () => {
    const fields = ["1", "-5", "", "9007199254740993", "-9223372036854775808", "9223372036854775807", "0"];

    const image = await imageOf("INTEGER", fields);

    const records = await recordsOf(image);
    expect(records).toHaveLength(1);
    expect(records[0]!.slice(0, fields.length)).toEqual([
      1n,
      -5n,
      null,
      9007199254740993n,
      -9223372036854775808n,
      9223372036854775807n,
      0n,
    ]);
    expect(await declaredTypes(image)).toEqual(new Array(VALUES_PER_RECORD).fill("INTEGER"));
  });

  it("should store DOUBLE values as reals, integral ones too", async () => {
    const records = await recordsOf(await imageOf("DOUBLE", ["1.5", "-0.25", "", "1e300", "3"]));

    expect(records[0]!.slice(0, 5)).toEqual([1.5, -0.25, null, 1e300, 3]);
    // A REAL column keeps 3 a real: sql.js hands it back as a number, not a bigint.
    expect(typeof records[0]![4]).toBe("number");
  });

  it("should store BOOLEAN values as 1 and 0 whatever their spelling", async () => {
    const records = await recordsOf(await imageOf("BOOLEAN", ["true", "FALSE", "1", "0", "", "True", "false"]));

    expect(records[0]!.slice(0, 7)).toEqual([1n, 0n, 1n, 0n, null, 1n, 0n]);
  });

  it("should store text as it is, the empty string apart from NULL, dates and timestamps in their canonical form", async () => {
    const strings = ["a", null, "", "ünï ✓", "with,comma", "multi\nline", 'say "hi"'];
    const texts = await recordsOf(await imageOf("STRING", strings));
    const dates = await recordsOf(await imageOf("DATE", ["2024-02-29", null, ""]));
    const stamps = await recordsOf(
      await imageOf("TIMESTAMP", ["2024-01-02T03:04:05Z", "2024-01-02 03:04", "2024-01-02T03:04:05.50+01:00", ""]),
    );

    expect(texts[0]!.slice(0, strings.length)).toEqual(strings);
    expect(dates[0]!.slice(0, 3)).toEqual(["2024-02-29", null, null]);
    expect(stamps[0]!.slice(0, 4)).toEqual([
      "2024-01-02 03:04:05",
      "2024-01-02 03:04:00",
      "2024-01-02 02:04:05.5",
      null,
    ]);
  });

  it.each([
    [37, 3],
    [16, 1],
    [32, 2],
    [1, 1],
    [0, 0],
  ])("should pack %i values into %i records of 16, the last one padded with NULL", async (count, records) => {
    const fields = Array.from({ length: count }, (_, i) => String(i + 1));

    const image = await imageOf("INTEGER", fields);

    expect(new TextDecoder().decode(image.slice(0, 16))).toBe(SQLITE_HEADER);
    const stored = await recordsOf(image);
    expect(stored).toHaveLength(records);
    expect(stored.every((record) => record.length === VALUES_PER_RECORD)).toBe(true);
    const flat = stored.flat();
    expect(flat.slice(0, count)).toEqual(fields.map((field) => BigInt(field)));
    expect(flat.slice(count)).toEqual(new Array(records * VALUES_PER_RECORD - count).fill(null));
  });

  it("should grow as values are added, and free its database when discarded", async () => {
    const builder = new ColumnImageBuilder((await sqliteInstance()).sql, "STRING");
    const empty = builder.bytes();
    for (let i = 0; i < 4000; i++) builder.add(`value number ${i} of the column`);

    expect(builder.bytes()).toBeGreaterThan(empty + 100_000);
    builder.discard();
    expect(() => builder.bytes()).toThrow();
  });
});

/** A CSV item of `rows` rows: an integer id, a category, an amount with NULLs, and a flag. */
function salesItem(rows: number): MemoryItem {
  const lines = ["id,category,amount,flag"];
  for (let id = 1; id <= rows; id++)
    lines.push(`${id},c${id % 5},${id % 7 === 0 ? "" : (id * 1.25).toFixed(2)},${id % 3 === 0 ? "true" : "false"}`);
  return {
    columns: [
      ["id", "INTEGER"],
      ["category", "STRING"],
      ["amount", "DOUBLE"],
      ["flag", "BOOLEAN"],
    ],
    data: lines.join("\n") + "\n",
  };
}

interface Build {
  outcome: ImageBuildOutcome;
  images: Map<number, Uint8Array>;
  opened: number;
}

/** Runs the real builder over an in-memory item, keeping the stored images. */
async function build(
  item: MemoryItem,
  budget: number,
  file: { rows?: number; bytes?: number } = {},
  io: { open?: () => Promise<ReadableStream<Uint8Array> | null>; store?: () => Promise<void> } = {},
): Promise<Build> {
  const bytes = typeof item.data === "string" ? new TextEncoder().encode(item.data) : item.data;
  const rows = file.rows ?? (typeof item.data === "string" ? item.data.split("\n").length - 2 : 0);
  const images = new Map<number, Uint8Array>();
  let opened = 0;
  const outcome = await buildColumnImages(
    tableLayout(storedSchema(item)),
    { rows, bytes: file.bytes ?? bytes.byteLength, name: "sales.csv" },
    {
      open: async () => {
        opened++;
        return io.open ? io.open() : new Blob([bytes]).stream();
      },
      store: async (index, image) => {
        if (io.store) await io.store();
        images.set(index, image);
      },
    },
    budget,
  );
  return { outcome, images, opened };
}

describe("buildColumnImages", () => {
  it("should build one image per column in one pass when the budget is large", async () => {
    const item = salesItem(100);

    const built = await build(item, 1 << 30);

    expect(built.outcome).toEqual({
      ok: true,
      passes: 1,
      bytes: [0, 1, 2, 3].map((index) => built.images.get(index)!.byteLength),
    });
    expect(built.opened).toBe(1);
    const ids = (await recordsOf(built.images.get(0)!)).flat().slice(0, 100);
    expect(ids).toEqual(Array.from({ length: 100 }, (_, i) => BigInt(i + 1)));
  });

  it("should build in several passes over the file when the images do not fit the budget together, with the same images", async () => {
    // Four text columns of ~2 KB a value: about 2.3 MB of image each, more than the smallest pass budget (8 MiB) together.
    const rows = 1000;
    const lines = ["a,b,c,d"];
    for (let r = 0; r < rows; r++)
      lines.push([0, 1, 2, 3].map((c) => `${r}-${c}-`.padEnd(2100, "xyz"[c % 3])).join(","));
    const item: MemoryItem = {
      columns: [
        ["a", "STRING"],
        ["b", "STRING"],
        ["c", "STRING"],
        ["d", "STRING"],
      ],
      data: lines.join("\n") + "\n",
    };

    const roomy = await build(item, 1 << 30);
    const tight = await build(item, (await sqliteInstance()).heapBytes() + (12 << 20));

    expect(roomy.outcome).toMatchObject({ ok: true, passes: 1 });
    if (!tight.outcome.ok) throw new Error(tight.outcome.message);
    expect(tight.outcome.passes).toBeGreaterThanOrEqual(2);
    expect(tight.opened).toBe(tight.outcome.passes);
    expect(tight.outcome.bytes).toEqual(roomy.outcome.ok ? roomy.outcome.bytes : null);
    expect([...tight.images.keys()].sort()).toEqual([0, 1, 2, 3]);
    for (const index of [0, 1, 2, 3])
      expect(await recordsOf(tight.images.get(index)!)).toEqual(await recordsOf(roomy.images.get(index)!));
  });

  it("should fail with a message naming the budget, and store nothing, when even one column does not fit", async () => {
    const item = salesItem(3000);
    const budget = (await sqliteInstance()).heapBytes() + 1000;

    const built = await build(item, budget);

    expect(built.outcome.ok).toBe(false);
    if (built.outcome.ok) return;
    expect(built.outcome.message).toMatch(
      new RegExp(`^building the column images needs more than the memory budget of ${budget} bytes \\(held \\d+\\)$`),
    );
    expect(built.images.size).toBe(0);
  });

  it("should fail, and store nothing, when the file has another number of rows than the catalog says", async () => {
    const item = salesItem(40);

    const more = await build(item, 1 << 30, { rows: 41 });
    const fewer = await build(item, 1 << 30, { rows: 39 });

    expect(more.outcome).toEqual({ ok: false, message: "sales.csv has 40 rows, the catalog says 41" });
    expect(fewer.outcome).toEqual({ ok: false, message: "sales.csv has 40 rows, the catalog says 39" });
    expect(more.images.size + fewer.images.size).toBe(0);
  });

  it("should report a stored file that is gone", async () => {
    const built = await build(salesItem(5), 1 << 30, {}, { open: async () => null });

    expect(built.outcome).toEqual({ ok: false, message: "the stored file of sales.csv is gone" });
  });

  it("should throw a storage failure as a TransientError, for the queue to retry", async () => {
    const failing = () => Promise.reject(new Error("R2 is unavailable"));

    await expect(build(salesItem(5), 1 << 30, {}, { open: failing })).rejects.toBeInstanceOf(TransientError);
    await expect(build(salesItem(5), 1 << 30, {}, { store: failing })).rejects.toThrow(
      /storing a column image of sales.csv failed: Error: R2 is unavailable/,
    );
  });

  it("should build the images of a gzip file from its decompressed rows", async () => {
    const item = salesItem(50);
    const plain = await build(item, 1 << 30);

    const zipped = await build({ ...item, data: await gzip(item.data as string) }, 1 << 30, { rows: 50 });

    expect(zipped.outcome).toEqual(plain.outcome);
  });

  it("should build images with no rows for a file with a header only", async () => {
    const item: MemoryItem = { ...salesItem(0) };

    const built = await build(item, 1 << 30, { rows: 0 });

    expect(built.outcome).toMatchObject({ ok: true, passes: 1 });
    for (const index of [0, 1, 2, 3]) expect(await recordsOf(built.images.get(index)!)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// The engine reading column images.

/** 53 rows (not a multiple of 16), with NULLs, amounts on both sides of 10, and quantities around 5. */
function factsItem(): MemoryItem {
  const lines = ["id,cat,amount,qty,ok,note"];
  for (let id = 1; id <= 53; id++) {
    const amount = id % 11 === 0 ? "" : String([9.5, 10, 100.25, 2, 10.5, 1e3, -3][id % 7]);
    const qty = id % 13 === 0 ? "" : String(id % 9);
    const ok = ["true", "false", "", "TRUE", "0", "1"][id % 6]!;
    const note = id % 4 === 0 ? "" : `"note ${id}, with comma"`;
    lines.push(`${id},c${id % 4},${amount},${qty},${ok},${note}`);
  }
  return {
    columns: [
      ["id", "INTEGER"],
      ["cat", "STRING"],
      ["amount", "DOUBLE"],
      ["qty", "INTEGER"],
      ["ok", "BOOLEAN"],
      ["note", "STRING"],
    ],
    data: lines.join("\n") + "\n",
  };
}

const FACTS = "img.set.facts";
const ITEMS = { [FACTS]: factsItem() };
const keyOf = (item: string, index: number) => `${item}#${index}`;

/** Runs a query in both modes and checks they succeed alike; returns the images run. */
async function bothModes(sql: string, items: Record<string, MemoryItem> = ITEMS) {
  const csv = await runEngine(sql, items, { mode: "csv" });
  const images = await runEngine(sql, items, { mode: "images" });
  if (!csv.outcome.ok) throw new Error(`CSV mode: ${csv.outcome.message}`);
  if (!images.outcome.ok) throw new Error(`images mode: ${images.outcome.message}`);
  expect(images.csv).toBe(csv.csv);
  return { csv, images };
}

describe("evaluateSql on column images", () => {
  it("should read no CSV, and fetch every column's image for SELECT *, rows in file order", async () => {
    const { images } = await bothModes(`SELECT * FROM ${FACTS}`);

    expect(images.source.opened).toEqual([]);
    expect([...images.source.imagesFetched].sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => keyOf(FACTS, i)));
    const ids = images.csv
      .trim()
      .split("\n")
      .slice(1)
      .map((line) => Number(line.split(",")[0]));
    expect(ids).toEqual(Array.from({ length: 53 }, (_, i) => i + 1));
    expect(images.outcome.ok && images.outcome.bytesLoaded).toBe(
      [...images.source.images.values()].reduce((sum, image) => sum + image.byteLength, 0),
    );
  });

  it("should fetch only the images of the columns the query uses, and load only their bytes", async () => {
    const { images } = await bothModes(`SELECT cat, sum(amount) FROM ${FACTS} WHERE qty > 2 GROUP BY cat ORDER BY cat`);

    expect(images.source.opened).toEqual([]);
    expect([...images.source.imagesFetched].sort()).toEqual([1, 2, 3].map((i) => keyOf(FACTS, i)));
    const used = [1, 2, 3].reduce((sum, i) => sum + images.source.images.get(keyOf(FACTS, i))!.byteLength, 0);
    expect(images.outcome.ok && images.outcome.bytesLoaded).toBe(used);
  });

  it("should fetch exactly one image, the smallest, for SELECT count(*)", async () => {
    const { images } = await bothModes(`SELECT count(*) FROM ${FACTS}`);

    expect(images.csv).toBe("count(*)\n53\n");
    expect(images.source.imagesFetched).toHaveLength(1);
    const sizes = [...images.source.images].map(([key, image]) => [key, image.byteLength] as const);
    const smallest = Math.min(...sizes.map(([, size]) => size));
    expect(images.source.images.get(images.source.imagesFetched[0]!)!.byteLength).toBe(smallest);
  });

  it("should count the rows of a file whose row count is a multiple of 16, and of a file with one row", async () => {
    const sixteen = { "img.set.sixteen": salesItem(32) };
    const one = { "img.set.one": salesItem(1) };

    expect((await bothModes("SELECT count(*), max(id) FROM img.set.sixteen", sixteen)).images.csv).toBe(
      "count(*),max(id)\n32,32\n",
    );
    expect((await bothModes("SELECT * FROM img.set.one", one)).images.csv).toBe(
      "id,category,amount,flag\n1,c1,1.25,0\n",
    );
  });

  it("should answer queries on a file with no rows", async () => {
    const empty = { "img.set.empty": salesItem(0) };

    const { images } = await bothModes("SELECT count(*), sum(amount) FROM img.set.empty WHERE category = 'c1'", empty);

    expect(images.csv).toBe("count(*),sum(amount)\n0,\n");
    expect(images.source.opened).toEqual([]);
  });

  it.each([
    ["an INTEGER column with a text literal", `SELECT id FROM ${FACTS} WHERE qty = '5' ORDER BY id`],
    ["a DOUBLE column with a text literal", `SELECT id, amount FROM ${FACTS} WHERE amount > '10' ORDER BY id`],
    ["a BOOLEAN column with a text literal", `SELECT id FROM ${FACTS} WHERE ok = '1' ORDER BY id`],
    ["a text column with a number", `SELECT count(*) FROM ${FACTS} WHERE cat > 2`],
    ["IN with text literals", `SELECT id FROM ${FACTS} WHERE qty IN ('1', '2') ORDER BY id`],
    [
      "the storage classes",
      `SELECT DISTINCT typeof(id), typeof(cat), typeof(amount), typeof(qty), typeof(ok), typeof(note) FROM ${FACTS} ORDER BY 1, 2, 3, 4, 5, 6`,
    ],
  ])("should compare %s as a loaded table does", async (_, sql) => {
    const { images } = await bothModes(sql);

    expect(images.source.opened).toEqual([]);
    expect(images.outcome.ok && images.outcome.rowCount).toBeGreaterThan(0);
  });

  it("should compare numerically, not as text, when a number column meets a text literal", async () => {
    const { images } = await bothModes(`SELECT id, amount FROM ${FACTS} WHERE amount > '10' ORDER BY id`);

    // Text comparison would keep 9.5 ('9.5' > '10') and drop 100.25 and 1000.
    const amounts = images.csv
      .trim()
      .split("\n")
      .slice(1)
      .map((line) => Number(line.split(",")[1]));
    expect(new Set(amounts)).toEqual(new Set([100.25, 10.5, 1000]));
    const { images: qty } = await bothModes(`SELECT count(*) FROM ${FACTS} WHERE qty = '5'`);
    expect(qty.csv).toBe(
      `count(*)\n${Array.from({ length: 53 }, (_, i) => i + 1).filter((id) => id % 13 !== 0 && id % 9 === 5).length}\n`,
    );
  });

  it("should join a data item with itself", async () => {
    const { images } = await bothModes(
      `SELECT a.id, b.id, a.cat FROM ${FACTS} a JOIN ${FACTS} b ON a.id = b.id + 1 AND a.cat = 'c1' ORDER BY a.id`,
    );

    expect(images.source.opened).toEqual([]);
    expect(images.csv.trim().split("\n")).toHaveLength(1 + 13);
  });

  it("should read a gzip file's images and a file without header with another delimiter", async () => {
    const facts = factsItem();
    const zipped: MemoryItem = {
      ...facts,
      data: await gzip(facts.data as string),
      options: { DeliveryType: "GZIP" },
    };
    const bare: MemoryItem = {
      columns: facts.columns,
      data: (facts.data as string)
        .split("\n")
        .slice(1)
        .join("\n")
        .replace(/,(?=(?:[^"]*"[^"]*")*[^"]*$)/g, ";"),
      options: { Header: false, Delimiter: ";" },
    };
    const items = { ...ITEMS, "img.set.zipped": zipped, "img.set.bare": bare };
    const sql = (name: string) =>
      `SELECT cat, count(*), sum(amount), group_concat(note, '|') FROM ${name} GROUP BY cat ORDER BY cat`;

    const expected = (await bothModes(sql(FACTS), items)).images.csv;

    expect((await bothModes(sql("img.set.zipped"), items)).images.csv).toBe(expected);
    expect((await bothModes(sql("img.set.bare"), items)).images.csv).toBe(expected);
  });
});

/** An item with `count` INTEGER columns c0 … c(count-1) and a few rows. */
function wideItem(count: number, rows = 20): MemoryItem {
  const columns = Array.from({ length: count }, (_, i) => [`c${i}`, "INTEGER"] as [string, DataTypeName]);
  const lines = [columns.map(([name]) => name).join(",")];
  for (let r = 1; r <= rows; r++) lines.push(columns.map((_, i) => String(r * 100 + i)).join(","));
  return { columns, data: lines.join("\n") + "\n" };
}

describe("evaluateSql beyond ten attached images", () => {
  it("should read from the CSV the tables whose images no longer fit, and still answer", async () => {
    const items = { "img.set.left": wideItem(6), "img.set.right": wideItem(6) };

    const { images } = await bothModes(
      "SELECT * FROM img.set.left l JOIN img.set.right r ON l.c0 = r.c0 ORDER BY l.c0",
      items,
    );

    expect(images.source.opened).toEqual(["img.set.right"]);
    expect([...images.source.imagesFetched].sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => keyOf("img.set.left", i)));
    expect(images.csv.trim().split("\n")).toHaveLength(1 + 20);
  });

  it("should attach ten images, and read an eleven-column table from the CSV", async () => {
    const items = { "img.set.ten": wideItem(10), "img.set.eleven": wideItem(11) };

    const ten = (await bothModes("SELECT * FROM img.set.ten", items)).images;
    const eleven = (await bothModes("SELECT * FROM img.set.eleven", items)).images;

    expect(ten.source.opened).toEqual([]);
    expect(ten.source.imagesFetched).toHaveLength(10);
    expect(eleven.source.opened).toEqual(["img.set.eleven"]);
    expect(eleven.source.imagesFetched).toEqual([]);
  });
});

/** A MemorySource whose column images are all gone from storage. */
class ImagesGoneSource extends MemorySource {
  override async openImage(key: string): Promise<Uint8Array | null> {
    await super.openImage(key);
    return null;
  }
}

describe("evaluateSql on column images, stopping", () => {
  it("should fail on the memory budget, naming the setting, before fetching any image", async () => {
    const run = await runEngine(`SELECT cat, sum(amount) FROM ${FACTS} GROUP BY cat`, ITEMS, {
      mode: "images",
      limits: { memoryBudgetBytes: 1 },
    });

    expect(run.outcome.ok).toBe(false);
    expect(!run.outcome.ok && run.outcome.message).toMatch(
      /^Failed: the query needs more than the memory budget of 1 bytes \(QUERY_MEMORY_BUDGET_BYTES; it held \d+\)/,
    );
    expect(run.source.imagesFetched).toEqual([]);
    expect(run.source.opened).toEqual([]);
    expect(run.target.state).toBe("open");
  });

  it("should fail on QUERY_MAX_LOAD_BYTES before fetching any image, and pass at exactly the images' size", async () => {
    const sql = `SELECT cat, sum(amount) FROM ${FACTS} GROUP BY cat ORDER BY cat`;
    const first = await runEngine(sql, ITEMS, { mode: "images" });
    if (!first.outcome.ok) throw new Error(first.outcome.message);
    const needed = first.outcome.bytesLoaded;

    const over = await runEngine(sql, ITEMS, { mode: "images", limits: { maxLoadBytes: needed - 1 } });
    const exact = await runEngine(sql, ITEMS, { mode: "images", limits: { maxLoadBytes: needed } });

    expect(over.outcome).toMatchObject({
      ok: false,
      bytesLoaded: 0,
      message: `Failed: the query would load more than the limit of ${needed - 1} bytes (QUERY_MAX_LOAD_BYTES). Query fewer or smaller data items.`,
    });
    expect(over.source.imagesFetched).toEqual([]);
    expect(exact.outcome).toMatchObject({ ok: true, bytesLoaded: needed });
    expect(exact.csv).toBe(first.csv);
  });

  it("should fail with a clear message when an image is gone from storage", async () => {
    const source = new ImagesGoneSource(ITEMS, "images");

    const run = await runEngine(`SELECT sum(qty) FROM ${FACTS}`, ITEMS, { source });

    expect(run.outcome).toMatchObject({
      ok: false,
      cancelled: false,
      message: "Failed: the data of facts was replaced or deleted while the query ran.",
    });
    expect(source.imagesFetched).toEqual([keyOf(FACTS, 3)]);
    expect(source.opened).toEqual([]);
  });
});

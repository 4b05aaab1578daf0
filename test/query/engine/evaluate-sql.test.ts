import { describe, expect, it } from "vitest";
import { TransientError } from "../../../src/worker/query/run-limits";
import { sqliteInstance } from "../../../src/worker/query/sqlite";
import { gzip } from "../../support/catalog";
import { MemoryControl, MemorySource, MemoryTarget, runEngine, type MemoryItem } from "../../support/engine";

const PEOPLE: MemoryItem = {
  columns: [
    ["id", "INTEGER"],
    ["name", "STRING"],
    ["score", "DOUBLE"],
    ["born", "DATE"],
  ],
  data: "id,name,score,born\n1,Ann,1.5,1990-01-02\n2,Bob,,1985-06-30\n3,Çağla,3,2001-12-31\n",
};

/** A table of `rows` rows: two small integer columns and four wide text columns. */
function wideItem(rows: number, width: number): MemoryItem {
  const lines = ["id,n,p1,p2,p3,p4"];
  for (let id = 1; id <= rows; id++) {
    const pad = String.fromCharCode(97 + (id % 26)).repeat(width);
    lines.push(`${id},${id % 10},${pad},${pad},${pad},${pad}`);
  }
  return {
    columns: [
      ["id", "INTEGER"],
      ["n", "INTEGER"],
      ["p1", "STRING"],
      ["p2", "STRING"],
      ["p3", "STRING"],
      ["p4", "STRING"],
    ],
    data: lines.join("\n") + "\n",
  };
}

/** A clock that moves `stepMs` forward every time it is read. */
function steppingClock(stepMs: number): () => number {
  let now = 1_000_000;
  return () => (now += stepMs);
}

/** A stored file whose stream fails after `chunks` good chunks, as a dropped R2 connection does. */
function failingStream(chunks: number): ReadableStream<Uint8Array> {
  const lines = String(PEOPLE.data).split(/(?<=\n)/);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent < chunks) controller.enqueue(new TextEncoder().encode(lines[sent++ % lines.length]));
      else controller.error(new Error("connection reset"));
    },
  });
}

const ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c";

describe("evaluateSql", () => {
  it("should load the named data item, run the query and write the CSV result", async () => {
    const run = await runEngine("SELECT id, name, score FROM a.b.people ORDER BY id", { "a.b.people": PEOPLE });

    expect(run.csv).toBe("id,name,score\n1,Ann,1.5\n2,Bob,\n3,Çağla,3.0\n");
    expect(run.outcome).toMatchObject({
      ok: true,
      rowCount: 3,
      size: new TextEncoder().encode(run.csv).byteLength,
      bytesLoaded: new TextEncoder().encode(String(PEOPLE.data)).byteLength,
      columns: [
        { name: "id", type: "INTEGER" },
        { name: "name", type: "STRING" },
        { name: "score", type: "DOUBLE" },
      ],
    });
    expect(run.target.state).toBe("finished");
  });

  it("should tell what it is doing while it runs", async () => {
    const run = await runEngine("SELECT count(*) FROM a.b.people", { "a.b.people": PEOPLE });

    expect(run.control.messages).toEqual(["Running: loading a.b.people.", "Running: executing the query."]);
  });

  it("should type each result column by the values it held, or as the DATE column it is", async () => {
    const run = await runEngine(
      `SELECT id, CASE WHEN id = 1 THEN 1 ELSE 2.5 END AS mixed_number,
              CASE WHEN id = 1 THEN 'x' ELSE 2 END AS mixed_text, NULL AS nothing_at_all, born
       FROM a.b.people`,
      { "a.b.people": PEOPLE },
    );

    expect(run.outcome.ok && run.outcome.columns.map((column) => column.type)).toEqual([
      "INTEGER",
      "DOUBLE",
      "STRING",
      "STRING",
      "DATE",
    ]);
  });

  it("should load a gzipped stored file", async () => {
    const plain = String(PEOPLE.data);
    const run = await runEngine("SELECT sum(id) AS s FROM a.b.people", {
      "a.b.people": { ...PEOPLE, data: await gzip(plain), options: { DeliveryType: "GZIP" } },
    });

    expect(run.csv).toBe("s\n6\n");
    expect(run.outcome.bytesLoaded).toBe(new TextEncoder().encode(plain).byteLength);
  });

  it("should load a file without a header row and with another delimiter", async () => {
    const run = await runEngine("SELECT k, v FROM a.b.semi ORDER BY v DESC", {
      "a.b.semi": {
        columns: [
          ["k", "STRING"],
          ["v", "INTEGER"],
        ],
        data: "x;1\ny,z;2\n",
        options: { Header: false, Delimiter: ";" },
      },
    });

    expect(run.csv).toBe('k,v\n"y,z",2\nx,1\n');
  });

  it("should load rows for a query that names no column of a table", async () => {
    const run = await runEngine("SELECT count(*) AS rows FROM a.b.people", { "a.b.people": PEOPLE });

    expect(run.csv).toBe("rows\n3\n");
  });

  it("should fail a query over a data item it cannot find, without opening anything", async () => {
    const run = await runEngine("SELECT * FROM a.b.people JOIN a.b.ghost", { "a.b.people": PEOPLE });

    expect(run.outcome).toMatchObject({
      ok: false,
      cancelled: false,
      message: "Failed: table a.b.ghost does not exist, or you may not read it.",
    });
    expect(run.source.opened).toEqual([]);
    expect(run.target.state).toBe("open");
  });

  it("should refuse a statement that is not read-only before loading any data", async () => {
    const run = await runEngine("DELETE FROM a.b.people", { "a.b.people": PEOPLE });

    expect(run.outcome.ok).toBe(false);
    expect(run.outcome.ok || run.outcome.message).toMatch(/^Failed: Only read-only queries/);
    expect(run.source.found).toEqual(["a.b.people"]);
    expect(run.source.opened).toEqual([]);
  });

  it("should fail with SQLite's message for an unknown column", async () => {
    const run = await runEngine("SELECT missing FROM a.b.people", { "a.b.people": PEOPLE });

    expect(run.outcome.ok || run.outcome.message).toBe("Failed: no such column: missing.");
  });

  it("should fail a query whose data was deleted while it ran", async () => {
    const source = new MemorySource({ "a.b.people": PEOPLE });
    source.open = async () => null;

    const run = await runEngine("SELECT * FROM a.b.people", {}, { source });

    expect(run.outcome.ok || run.outcome.message).toBe("Failed: the data of people was deleted while the query ran.");
  });

  it.each([
    [
      "the catalog cannot be read",
      (source: MemorySource) => (source.find = () => Promise.reject(new Error("D1 down"))),
      /reading the catalog failed: Error: D1 down/,
    ],
    [
      "the stored file cannot be opened",
      (source: MemorySource) => (source.open = () => Promise.reject(new Error("R2 down"))),
      /opening a data item failed: Error: R2 down/,
    ],
    [
      "the stored file cannot be read at all",
      (source: MemorySource) => (source.open = async () => failingStream(0)),
      /reading t0 from storage failed: Error: connection reset/,
    ],
    [
      "the stored file breaks off while it is read",
      (source: MemorySource) => (source.open = async () => failingStream(2)),
      /reading t0 from storage failed: Error: connection reset/,
    ],
  ])("should throw a transient error, for the consumer to retry, when %s", async (_case, breakSource, message) => {
    const source = new MemorySource({ "a.b.people": PEOPLE });
    breakSource(source);

    const run = runEngine("SELECT * FROM a.b.people", {}, { source });

    await expect(run).rejects.toThrow(TransientError);
    await expect(run).rejects.toThrow(message);
  });

  it("should throw a transient error and abort the result when the result cannot be written", async () => {
    const target = new MemoryTarget();
    target.write = () => Promise.reject(new Error("R2 full"));

    const run = runEngine("SELECT * FROM a.b.people", { "a.b.people": PEOPLE }, { target });

    await expect(run).rejects.toThrow(/writing the result failed: Error: R2 full/);
    expect(target.state).toBe("aborted");
  });
});

describe("evaluateSql limits", () => {
  it("should stop loading past maxLoadBytes, naming QUERY_MAX_LOAD_BYTES", async () => {
    const run = await runEngine(
      "SELECT count(*) FROM a.b.wide",
      { "a.b.wide": wideItem(2000, 50) },
      {
        limits: { maxLoadBytes: 10_000 },
      },
    );

    expect(run.outcome.ok || run.outcome.message).toBe(
      "Failed: the query would load more than the limit of 10000 bytes (QUERY_MAX_LOAD_BYTES). Query fewer or smaller data items.",
    );
    expect(run.outcome.bytesLoaded).toBeGreaterThan(10_000);
  });

  it("should stop past the memory budget, saying how much it held", async () => {
    const run = await runEngine(
      "SELECT count(*) FROM a.b.people",
      { "a.b.people": PEOPLE },
      {
        limits: { memoryBudgetBytes: 65_536 },
      },
    );

    expect(run.outcome.ok || run.outcome.message).toMatch(
      /^Failed: the query needs more than the memory budget of 65536 bytes \(QUERY_MEMORY_BUDGET_BYTES; it held \d+\)\. Select fewer columns or rows\.$/,
    );
  });

  it("should stop a result that grows past maxResultBytes while it streams, and abort it", async () => {
    const run = await runEngine(ENDLESS, {}, { limits: { maxResultBytes: 200_000 } });

    expect(run.outcome.ok || run.outcome.message).toMatch(/limit of 200000 bytes \(QUERY_MAX_RESULT_BYTES\)/);
    expect(run.target.state).toBe("aborted");
  });

  it("should stop a result with more rows than maxResultRows, naming QUERY_MAX_RESULT_ROWS", async () => {
    const run = await runEngine(
      "SELECT id FROM a.b.people",
      { "a.b.people": PEOPLE },
      { limits: { maxResultRows: 2 } },
    );

    expect(run.outcome.ok || run.outcome.message).toMatch(/more than the limit of 2 rows \(QUERY_MAX_RESULT_ROWS\)/);
    expect(run.target.state).toBe("aborted");
  });

  it("should stop loading when the time limit has passed", async () => {
    const run = await runEngine(
      "SELECT count(*) FROM a.b.people",
      { "a.b.people": PEOPLE },
      {
        limits: { timeLimitMs: 1000 },
        clock: steppingClock(10_000),
      },
    );

    expect(run.outcome.ok || run.outcome.message).toBe(
      "Failed: the query ran longer than the time limit of 1 s (QUERY_TIME_LIMIT_SECONDS) while loading.",
    );
  });

  it("should stop executing when the time limit has passed", async () => {
    const run = await runEngine(ENDLESS, {}, { limits: { timeLimitMs: 5000 }, clock: steppingClock(1000) });

    expect(run.outcome.ok || run.outcome.message).toBe(
      "Failed: the query ran longer than the time limit of 5 s (QUERY_TIME_LIMIT_SECONDS).",
    );
    expect(run.target.state).toBe("aborted");
    // Its timings say how long it executed before the limit stopped it.
    expect(run.outcome.executeMs).toBeGreaterThan(0);
  });

  it("should stop a cancelled query at its next check, and abort its result", async () => {
    const control = new MemoryControl(2);

    const run = await runEngine(ENDLESS, {}, { clock: steppingClock(600), control });

    expect(run.outcome).toMatchObject({ ok: false, cancelled: true, message: "Cancelled by its owner." });
    expect(control.cancelChecks).toBe(3);
    expect(run.target.state).toBe("aborted");
  });

  // The clock is read between rows and, every 10,000 virtual-machine steps, inside the statement.
  it("should not ask about cancellation more than about once a second", async () => {
    const control = new MemoryControl();

    await runEngine(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 50000) SELECT x FROM c",
      {},
      {
        clock: steppingClock(20),
        control,
      },
    );

    expect(control.cancelChecks).toBeGreaterThan(0);
    expect(control.cancelChecks).toBeLessThanOrEqual(2);
  });
});

describe("column pruning", () => {
  it("should load only the columns a query names, and still answer right", async () => {
    const items = { "a.b.wide": wideItem(2000, 500) };
    const narrowSql = "SELECT n, count(*) AS c, sum(id) AS s FROM a.b.wide GROUP BY n ORDER BY n";
    const wideSql = "SELECT * FROM a.b.wide WHERE id = 0";

    await runEngine(narrowSql, items);
    await runEngine(wideSql, items);
    const narrow = await runEngine(narrowSql, items);
    const wide = await runEngine(wideSql, items);

    const expected = ["n,c,s"];
    for (let n = 0; n < 10; n++) {
      let sum = 0;
      for (let id = 1; id <= 2000; id++) if (id % 10 === n) sum += id;
      expected.push(`${n},200,${sum}`);
    }
    expect(narrow.csv).toBe(expected.join("\n") + "\n");
    expect(wide.csv).toBe("id,n,p1,p2,p3,p4\n");
    expect(narrow.outcome.bytesLoaded).toBe(wide.outcome.bytesLoaded);
    // Four text columns of 500 characters in 2000 rows are 4 MB the narrow query never stores.
    expect(wide.outcome.peakMemoryBytes - narrow.outcome.peakMemoryBytes).toBeGreaterThan(3_000_000);
  });

  it("should load every column for SELECT *, table.* and NATURAL JOIN", async () => {
    const items = { "a.b.wide": wideItem(10, 3) };

    const star = await runEngine("SELECT * FROM a.b.wide WHERE id = 1", items);
    const qualified = await runEngine("SELECT w.* FROM a.b.wide w WHERE id = 2", items);
    const natural = await runEngine("SELECT count(*) AS c FROM a.b.wide NATURAL JOIN a.b.wide", items);

    expect(star.csv).toBe("id,n,p1,p2,p3,p4\n1,1,bbb,bbb,bbb,bbb\n");
    expect(qualified.csv).toBe("id,n,p1,p2,p3,p4\n2,2,ccc,ccc,ccc,ccc\n");
    expect(natural.csv).toBe("c\n10\n");
  });
});

describe("memory", () => {
  it("should not grow the WebAssembly heap over 1,000 small queries", async () => {
    const lines = ["k,v,label"];
    for (let i = 0; i < 200; i++) lines.push(`${i % 7},${i},"row, ${i}"`);
    const items: Record<string, MemoryItem> = {
      "a.b.small": {
        columns: [
          ["k", "INTEGER"],
          ["v", "INTEGER"],
          ["label", "STRING"],
        ],
        data: lines.join("\n") + "\n",
      },
    };
    const heap: number[] = [];

    for (let i = 0; i < 1000; i++) {
      const run = await runEngine(
        `SELECT k, sum(v) AS total, max(label) AS label FROM a.b.small WHERE v >= ${i % 50} GROUP BY k ORDER BY k`,
        items,
      );
      if (!run.outcome.ok) throw new Error(run.outcome.message);
      heap.push((await sqliteInstance()).heapBytes());
    }

    const afterWarmUp = Math.max(...heap.slice(0, 200));
    const lastRuns = Math.max(...heap.slice(800));
    expect(afterWarmUp).toBeGreaterThan(1024 * 1024);
    expect(lastRuns).toBeLessThanOrEqual(afterWarmUp);
  }, 120_000);
});

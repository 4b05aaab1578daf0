import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { resultObjectKey } from "../../src/worker/storage/keys";
import { login, type LoggedIn } from "../support/login";
import { bareName, csvOf, failureOf, runSql, seedDataset, type ColumnSpec } from "../support/query";

// SQL through the whole path: upload, POST /v1/query, the real consumer, the result download.

let owner: LoggedIn;
let other: LoggedIn;
let shop: string;
let geo: string;
let publicSet: string;
let privateSet: string;

const ORDER_COLUMNS: ColumnSpec[] = [
  ["id", "INTEGER"],
  ["customer", "INTEGER"],
  ["amount", "DOUBLE"],
  ["day", "DATE"],
  ["ts", "TIMESTAMP"],
  ["ok", "BOOLEAN"],
  ["note", "STRING"],
  ["big", "INTEGER"],
];

const ORDERS = [
  "id,customer,amount,day,ts,ok,note,big",
  '1,1,2,2024-01-15,2024-01-15T10:00:00Z,true,"comma, inside",9007199254740993',
  '2,2,10.5,2024-02-01,2024-02-01T08:30:00+02:00,false,"say ""hi""",-9223372036854775808',
  '3,1,,2023-12-31,2023-12-31T23:59:00Z,1,"line1\nline2",9223372036854775807',
  "4,3,0.1,2024-02-29,2024-02-29T00:00:00.5Z,0,,1",
  "5,2,-3.25,,,TRUE,日本 ünïcödé ✓,",
].join("\n");

/** `account.dataset.data` with each part as given. */
function name(account: string, dataset: string, data: string): string {
  return `${account}.${dataset}.${data}`;
}

let orders: string;

beforeAll(async () => {
  owner = await login("q_sql");
  other = await login("q_sql_other");
  shop = bareName("shop");
  geo = bareName("geo");
  publicSet = bareName("pub");
  privateSet = bareName("priv");
  await seedDataset(owner.accessToken, owner.accountName, shop, {
    orders: { columns: ORDER_COLUMNS, csv: ORDERS },
    customers: {
      columns: [
        ["id", "INTEGER"],
        ["name", "STRING"],
        ["region", "STRING"],
      ],
      csv: "id,name,region\n1,Ada,north\n2,Bo,south\n3,Cy,north\n",
    },
    "orders.2024.csv": {
      columns: [
        ["id", "INTEGER"],
        ["total", "DOUBLE"],
      ],
      csv: "id,total\n1,2\n2,10.5\n",
    },
    "my-data": { columns: [["k", "STRING"]], csv: "k\nx\ny\nz\n" },
  });
  await seedDataset(owner.accessToken, owner.accountName, geo, {
    regions: {
      columns: [
        ["code", "STRING"],
        ["label", "STRING"],
      ],
      csv: "code,label\nnorth,The North\nsouth,The South\n",
    },
  });
  await seedDataset(
    other.accessToken,
    other.accountName,
    publicSet,
    {
      rates: {
        columns: [
          ["region", "STRING"],
          ["rate", "DOUBLE"],
        ],
        csv: "region,rate\nnorth,0.5\nsouth,2\n",
      },
    },
    "public",
  );
  await seedDataset(other.accessToken, other.accountName, privateSet, {
    secret: { columns: [["x", "INTEGER"]], csv: "x\n42\n" },
  });
  orders = name(owner.accountName, shop, "orders");
});

function sql(strings: TemplateStringsArray, ...values: string[]): string {
  return String.raw({ raw: strings }, ...values);
}

describe("data item names", () => {
  it.each([
    ["bare parts", (a: string, d: string) => `${a}.${d}.orders`],
    ["double-quoted parts", (a: string, d: string) => `"${a}"."${d}"."orders"`],
    ["backtick-quoted parts", (a: string, d: string) => `\`${a}\`.\`${d}\`.\`orders\``],
    ["mixed quoting", (a: string, d: string) => `"${a}".${d}.\`orders\``],
    ["the whole name in backticks", (a: string, d: string) => `\`${a}.${d}.orders\``],
  ])("should find a data item named with %s", async (_form, written) => {
    expect(await csvOf(owner.accessToken, `SELECT count(*) AS n FROM ${written(owner.accountName, shop)}`)).toBe(
      "n\n5\n",
    );
  });

  it("should read a DataName with dots written as one backtick-quoted name, splitting at the first two dots", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT id, total FROM \`${owner.accountName}.${shop}.orders.2024.csv\` ORDER BY id`,
    );

    expect(csv).toBe("id,total\n1,2.0\n2,10.5\n");
  });

  it("should read DataNames with dots and dashes written as quoted parts", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT (SELECT count(*) FROM ${owner.accountName}.${shop}."orders.2024.csv") AS dotted,
              (SELECT group_concat(k, '') FROM ${owner.accountName}.\`${shop}\`."my-data") AS dashed`,
    );

    expect(csv).toBe("dotted,dashed\n2,xyz\n");
  });

  it("should let columns be qualified with the data name", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT orders.id FROM ${orders} WHERE orders.ok = 1 ORDER BY orders.id DESC`,
    );

    expect(csv).toBe("id\n5\n3\n1\n");
  });

  it("should fail a dashed name written bare, saying how to quote it", async () => {
    const message = await failureOf(owner.accessToken, `SELECT * FROM ${owner.accountName}.${shop}.my-data`);

    expect(message).toMatch(/must be quoted/);
  });

  it("should fail a two-part name, saying a data item has three", async () => {
    expect(await failureOf(owner.accessToken, `SELECT * FROM ${shop}.orders`)).toMatch(/three: Account\.Dataset\.Data/);
  });
});

describe("joins", () => {
  it("should join two data items of one dataset", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT o.id, c.name FROM ${orders} o JOIN ${name(owner.accountName, shop, "customers")} c
       ON c.id = o.customer ORDER BY o.id`,
    );

    expect(csv).toBe("id,name\n1,Ada\n2,Bo\n3,Ada\n4,Cy\n5,Bo\n");
  });

  it("should join data items of different datasets", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT c.name, r.label FROM ${name(owner.accountName, shop, "customers")} c
       JOIN ${name(owner.accountName, geo, "regions")} r ON r.code = c.region ORDER BY c.name`,
    );

    expect(csv).toBe("name,label\nAda,The North\nBo,The South\nCy,The North\n");
  });

  it("should join the same data item with itself", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT a.id, b.id AS next FROM ${orders} a JOIN ${orders} b ON b.id = a.id + 1 ORDER BY a.id`,
    );

    expect(csv).toBe("id,next\n1,2\n2,3\n3,4\n4,5\n");
  });

  it("should read another user's public dataset and join it with the caller's own data", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT c.name, p.rate FROM ${name(owner.accountName, shop, "customers")} c
       JOIN ${name(other.accountName, publicSet, "rates")} p ON p.region = c.region ORDER BY c.name`,
    );

    expect(csv).toBe("name,rate\nAda,0.5\nBo,2.0\nCy,0.5\n");
  });
});

describe("visibility", () => {
  it("should fail a query of another user's private dataset exactly as one of a dataset that does not exist", async () => {
    const hidden = await failureOf(owner.accessToken, `SELECT * FROM ${name(other.accountName, privateSet, "secret")}`);
    const missing = await failureOf(
      owner.accessToken,
      `SELECT * FROM ${name(other.accountName, "no_such_set", "secret")}`,
    );

    expect(hidden).toBe(
      `Failed: table ${name(other.accountName, privateSet, "secret")} does not exist, or you may not read it.`,
    );
    expect(missing.replace("no_such_set", privateSet)).toBe(hidden);
  });

  it("should let the owner of the private dataset query it", async () => {
    expect(await csvOf(other.accessToken, `SELECT x FROM ${name(other.accountName, privateSet, "secret")}`)).toBe(
      "x\n42\n",
    );
  });

  it("should fail a data item that does not exist in a readable dataset with the same message", async () => {
    const message = await failureOf(owner.accessToken, `SELECT * FROM ${name(owner.accountName, shop, "nope")}`);

    expect(message).toBe(
      `Failed: table ${name(owner.accountName, shop, "nope")} does not exist, or you may not read it.`,
    );
  });
});

describe("did you mean", () => {
  it("should name the closest data item the caller may read, written so that it runs", async () => {
    const message = await failureOf(owner.accessToken, `SELECT * FROM ${name(owner.accountName, shop, "ordres")}`);

    expect(message).toBe(
      `Failed: table ${name(owner.accountName, shop, "ordres")} does not exist, or you may not read it. ` +
        `Did you mean ${orders}?`,
    );
    const dotted = await failureOf(owner.accessToken, `SELECT * FROM ${owner.accountName}.${shop}.\`order.2024.csv\``);
    expect(dotted).toContain(`Did you mean ${owner.accountName}.${shop}.\`orders.2024.csv\`?`);
    const suggested = /Did you mean (.*)\?$/.exec(dotted)![1]!;
    expect(await csvOf(owner.accessToken, `SELECT count(*) AS n FROM ${suggested}`)).toBe("n\n2\n");
  });

  it("should name a close item of another user's public dataset, but never one of a private dataset", async () => {
    expect(await failureOf(owner.accessToken, `SELECT * FROM ${name(other.accountName, publicSet, "rate")}`)).toContain(
      `Did you mean ${name(other.accountName, publicSet, "rates")}?`,
    );
    const hidden = await failureOf(
      owner.accessToken,
      `SELECT * FROM ${name(other.accountName, privateSet, "secrets")}`,
    );

    expect(hidden).toBe(
      `Failed: table ${name(other.accountName, privateSet, "secrets")} does not exist, or you may not read it.`,
    );
    // Its owner is told.
    expect(
      await failureOf(other.accessToken, `SELECT * FROM ${name(other.accountName, privateSet, "secrets")}`),
    ).toContain(`Did you mean ${name(other.accountName, privateSet, "secret")}?`);
  });

  it("should name the closest columns of the query's data items", async () => {
    expect(await failureOf(owner.accessToken, `SELECT amout FROM ${orders}`)).toBe(
      "Failed: no such column: amout. Did you mean amount?",
    );
    expect(await failureOf(owner.accessToken, `SELECT o.cust FROM ${orders} o`)).toBe(
      "Failed: no such column: o.cust. Did you mean customer?",
    );
    expect(await failureOf(owner.accessToken, `SELECT zzz FROM ${orders}`)).toBe("Failed: no such column: zzz.");
  });
});

describe("read-only", () => {
  it.each([
    ["DROP", () => `DROP TABLE ${orders}`, /used where a column is expected/],
    ["INSERT", () => `INSERT INTO ${orders} VALUES (1)`, /used where a column is expected/],
    ["UPDATE", () => `UPDATE ${orders} SET id = 0`, /used where a column is expected/],
    ["DELETE", () => `DELETE FROM ${orders}`, /read-only .* this is a DELETE\.$/],
    [
      "WITH … DELETE",
      () => `WITH x AS (SELECT id FROM ${orders}) DELETE FROM ${orders} WHERE id IN x`,
      /this is a WITH … DELETE\.$/,
    ],
    ["ATTACH", () => "ATTACH DATABASE ':memory:' AS other", /read-only .* this is an ATTACH\.$/],
    ["PRAGMA", () => "PRAGMA query_only = 0", /read-only .* this is a PRAGMA\.$/],
    ["CREATE", () => `CREATE TABLE copy AS SELECT * FROM ${orders}`, /read-only .* this is a CREATE TABLE\.$/],
    ["EXPLAIN", () => `EXPLAIN SELECT * FROM ${orders}`, /read-only .* this is an EXPLAIN\.$/],
    [
      "two statements",
      () => `SELECT 1; SELECT count(*) FROM ${orders}`,
      /^Failed: Only one statement is allowed; found 2\.$/,
    ],
    [
      "a second statement after a block comment",
      () => `SELECT 1 /* harmless; */; DELETE FROM ${orders}`,
      /Only one statement is allowed; found 2/,
    ],
    [
      "a second statement after a line comment",
      () => `SELECT id FROM ${orders} -- the rest\n; DELETE FROM ${orders}`,
      /Only one statement is allowed; found 2/,
    ],
  ])("should fail %s with a message and change nothing", async (_case, statement, expected) => {
    const message = await failureOf(owner.accessToken, statement());
    const after = await csvOf(owner.accessToken, `SELECT count(*) AS n FROM ${orders}`);

    expect(message).toMatch(expected);
    expect(message).toMatch(/^Failed: /);
    expect(after).toBe("n\n5\n");
  });

  it.each([
    ["WITH … SELECT", () => `WITH x AS (SELECT id FROM ${orders}) SELECT count(*) AS n FROM x`, "n\n5\n"],
    ["VALUES", () => "VALUES (1, 'a'), (2, NULL)", "column1,column2\n1,a\n2,\n"],
    ["a trailing semicolon and comment", () => `SELECT 1 AS one; -- done`, "one\n1\n"],
    ["SQL inside a string", () => "SELECT '; DROP TABLE t0' AS text", "text\n; DROP TABLE t0\n"],
  ])("should run %s", async (_case, statement, expected) => {
    expect(await csvOf(owner.accessToken, statement())).toBe(expected);
  });
});

describe("typed loading", () => {
  it("should compare and order DATE values", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT id, day FROM ${orders} WHERE day >= '2024-01-01' ORDER BY day DESC`,
    );

    expect(csv).toBe("id,day\n4,2024-02-29\n2,2024-02-01\n1,2024-01-15\n");
  });

  it("should compare and order TIMESTAMP values as instants, with zones converted to UTC", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT id, ts FROM ${orders} WHERE ts > '2024-02-01 07:00:00' OR ts < '2024-01-01' ORDER BY ts`,
    );

    expect(csv).toBe("id,ts\n3,2023-12-31 23:59:00\n4,2024-02-29 00:00:00.5\n");
  });

  it("should store an offset TIMESTAMP as its UTC instant", async () => {
    expect(await csvOf(owner.accessToken, `SELECT ts FROM ${orders} WHERE id = 2`)).toBe("ts\n2024-02-01 06:30:00\n");
  });

  it("should compare TIMESTAMP values with SQLite's own date functions and with literals written with a space", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT id FROM ${orders}
       WHERE ts = datetime('2024-02-01T08:30:00+02:00') OR ts BETWEEN '2024-01-15 00:00:00' AND '2024-01-15 23:59:59'
          OR (ts >= datetime('2024-02-29') AND ts < datetime('2024-02-29', '+1 second'))
       ORDER BY id`,
    );

    expect(csv).toBe("id\n1\n2\n4\n");
  });

  it("should filter BOOLEAN values written in any accepted form as 1 and 0", async () => {
    const yes = await csvOf(owner.accessToken, `SELECT id, ok FROM ${orders} WHERE ok = 1 ORDER BY id`);
    const no = await csvOf(owner.accessToken, `SELECT group_concat(id) AS ids FROM ${orders} WHERE NOT ok`);

    expect(yes).toBe("id,ok\n1,1\n3,1\n5,1\n");
    expect(no).toBe('ids\n"2,4"\n');
  });

  it("should load empty fields as NULL", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT id, amount IS NULL AS a, day IS NULL AS d, ts IS NULL AS t, note IS NULL AS n, big IS NULL AS b
       FROM ${orders} WHERE amount IS NULL OR day IS NULL OR note IS NULL ORDER BY id`,
    );

    expect(csv).toBe("id,a,d,t,n,b\n3,1,0,0,0,0\n4,0,0,0,1,0\n5,0,1,1,0,1\n");
  });

  it("should keep unicode text as it was uploaded, and match it", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT note, length(note) AS chars FROM ${orders} WHERE note LIKE '日本%'`,
    );

    expect(csv).toBe("note,chars\n日本 ünïcödé ✓,12\n");
  });

  it("should keep 64-bit integers beyond 2^53 exact, to the ends of the range", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT big, typeof(big) AS type, big - 1 AS less FROM ${orders} WHERE big IS NOT NULL ORDER BY big`,
    );

    expect(csv).toBe(
      [
        "big,type,less",
        "-9223372036854775808,integer,-9223372036854776000.0",
        "1,integer,0",
        "9007199254740993,integer,9007199254740992",
        "9223372036854775807,integer,9223372036854775806",
        "",
      ].join("\n"),
    );
  });

  it("should write REAL values as real numbers, whole ones included", async () => {
    const csv = await csvOf(
      owner.accessToken,
      `SELECT id, amount, typeof(amount) AS type FROM ${orders} WHERE amount IS NOT NULL ORDER BY amount`,
    );

    expect(csv).toBe("id,amount,type\n5,-3.25,real\n4,0.1,real\n1,2.0,real\n2,10.5,real\n");
  });

  it("should give SQL arithmetic its SQLite types", async () => {
    expect(
      await csvOf(owner.accessToken, "SELECT 7 / 2 AS i, 7 / 2.0 AS r, 1e300 * 10 AS big, 2.0 AS two, -0.0 AS z"),
    ).toBe("i,r,big,two,z\n3,3.5,1e+301,2.0,0.0\n");
  });
});

describe("result CSV", () => {
  it("should quote fields with commas, quotes and line breaks, leave NULL empty and end lines with \\n", async () => {
    const csv = await csvOf(owner.accessToken, `SELECT id, note FROM ${orders} WHERE id <= 4 ORDER BY id`);

    expect(csv).toBe('id,note\n1,"comma, inside"\n2,"say ""hi"""\n3,"line1\nline2"\n4,\n');
    expect(csv).not.toContain("\r");
  });

  it("should write a header row, quoting names that need it", async () => {
    expect(await csvOf(owner.accessToken, `SELECT 1 AS "a,b", 2 AS "say ""x""", 3 AS plain`)).toBe(
      'a,b,say "x",plain\n'.replace("a,b", '"a,b"').replace('say "x"', '"say ""x"""') + "1,2,3\n",
    );
  });

  it("should write only the header for a result without rows", async () => {
    expect(await csvOf(owner.accessToken, `SELECT id, note FROM ${orders} WHERE id > 99`)).toBe("id,note\n");
  });
});

describe("limits", () => {
  it("should fail a query that would load more than QUERY_MAX_LOAD_BYTES, naming the limit", async () => {
    const run = await runSql(owner.accessToken, `SELECT count(*) FROM ${orders}`, { QUERY_MAX_LOAD_BYTES: "50" });

    expect(run.status.Status).toBe("failed");
    expect(run.status.Message).toMatch(/limit of 50 bytes \(QUERY_MAX_LOAD_BYTES\)/);
    expect(await env.BUCKET.head(await resultObjectKey(run.queryId))).toBeNull();
  });

  it("should count the bytes of every data item a query loads against QUERY_MAX_LOAD_BYTES", async () => {
    const customers = name(owner.accountName, shop, "customers");
    const each = new TextEncoder().encode("id,name,region\n1,Ada,north\n2,Bo,south\n3,Cy,north\n").byteLength;
    const limit = { QUERY_MAX_LOAD_BYTES: String(each + 10) };

    const alone = await runSql(owner.accessToken, `SELECT count(*) AS n FROM ${customers}`, limit);
    const together = await runSql(
      owner.accessToken,
      `SELECT count(*) AS n FROM ${customers} JOIN ${name(owner.accountName, geo, "regions")} ON 1`,
      limit,
    );

    expect(alone.status.Status).toBe("succeeded");
    expect(together.status.Message).toMatch(/QUERY_MAX_LOAD_BYTES/);
  });

  it("should fail a query that needs more than QUERY_MEMORY_BUDGET_BYTES, naming the budget", async () => {
    const message = await failureOf(owner.accessToken, `SELECT count(*) FROM ${orders}`, {
      QUERY_MEMORY_BUDGET_BYTES: "1000000",
    });

    expect(message).toMatch(/memory budget of 1000000 bytes/);
  });

  it("should fail a result larger than QUERY_MAX_RESULT_BYTES, naming the limit, and keep one at the limit", async () => {
    const statement = `SELECT count(*) AS n FROM ${orders}`;

    const at = await runSql(owner.accessToken, statement, { QUERY_MAX_RESULT_BYTES: "4" });
    const over = await runSql(owner.accessToken, statement, { QUERY_MAX_RESULT_BYTES: "3" });

    expect(at.csv).toBe("n\n5\n");
    expect(over.status.Status).toBe("failed");
    expect(over.status.Message).toMatch(/limit of 3 bytes \(QUERY_MAX_RESULT_BYTES\)/);
    expect(await env.BUCKET.head(await resultObjectKey(over.queryId))).toBeNull();
  });

  it("should fail a large result streaming past QUERY_MAX_RESULT_BYTES while it runs", async () => {
    const run = await runSql(
      owner.accessToken,
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x, 'padding padding' FROM c",
      { QUERY_MAX_RESULT_BYTES: "1000000" },
    );

    expect(run.status.Status).toBe("failed");
    expect(run.status.Message).toMatch(/QUERY_MAX_RESULT_BYTES/);
    expect(await env.BUCKET.head(await resultObjectKey(run.queryId))).toBeNull();
  }, 30_000);

  it("should fail a query running longer than QUERY_TIME_LIMIT_SECONDS, naming the limit", async () => {
    const started = Date.now();
    const message = await failureOf(
      owner.accessToken,
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
      { QUERY_TIME_LIMIT_SECONDS: "1" },
    );

    expect(message).toBe("Failed: the query ran longer than the time limit of 1 s (QUERY_TIME_LIMIT_SECONDS).");
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);
});

import { describe, expect, it } from "vitest";
import { ingestCsv, type IngestOptions, type IngestResult } from "../../src/worker/ingest/csv-ingest";
import type { Column, TableDefinition } from "../../src/worker/ingest/data-schema";
import type { DataTypeName } from "../../src/worker/ingest/value-types";
import type { WorkCounter } from "../../src/worker/ingest/work-counter";
import { concatBytes, failingStream, gzip, trackedStream, utf8 } from "./streams";

const LIMITS = { maxDecompressedBytes: 64 * 1024 * 1024 };

function ingest(
  file: string | Uint8Array,
  options: Partial<IngestOptions> = {},
  chunking: number | readonly number[] = 7,
): Promise<IngestResult> {
  const bytes = typeof file === "string" ? utf8(file) : file;
  return ingestCsv(trackedStream(bytes, chunking).stream, { limits: LIMITS, ...options });
}

function column(name: string, type: DataTypeName, nullable = true): Column {
  return { Name: name, DataType: { DataType: type, DataTypeOptions: { Nullable: nullable } } };
}

function table(...columns: Column[]): TableDefinition {
  return { Columns: columns };
}

function typesOf(result: IngestResult): Record<string, DataTypeName> {
  if (!result.ok) throw new Error(`expected success, got: ${result.message}`);
  return Object.fromEntries(result.columns.map((c) => [c.Name, c.DataType.DataType]));
}

function failureOf(result: IngestResult): Extract<IngestResult, { ok: false }> {
  if (result.ok) throw new Error("expected the ingest to fail");
  return result;
}

const PEOPLE = table(
  column("id", "INTEGER", false),
  column("name", "STRING"),
  column("score", "DOUBLE"),
  column("born", "DATE"),
);

describe("ingestCsv: generating the table", () => {
  it("should infer each column's narrowest type and count the data rows", async () => {
    const file =
      "id,price,active,flag,day,at,label,nothing\n" +
      "1,1.5,true,1,2024-01-31,2024-01-31T10:00:00Z,a,\n" +
      "2,2,FALSE,0,2024-02-29,2024-02-29 23:59,b,\n" +
      "3,,,1,,2024-03-01T00:00:00+09:00,7,\n";
    const result = await ingest(file);
    expect(typesOf(result)).toEqual({
      id: "INTEGER",
      price: "DOUBLE",
      active: "BOOLEAN",
      flag: "INTEGER",
      day: "DATE",
      at: "TIMESTAMP",
      label: "STRING",
      nothing: "STRING",
    });
    expect(result).toMatchObject({ ok: true, rowCount: 3, deliveryType: "RAW", decompressedBytes: utf8(file).length });
  });

  it("should generate nullable columns", async () => {
    const result = await ingest("a\n1\n");
    expect(result.ok && result.columns).toEqual([column("a", "INTEGER")]);
  });

  it("should give STRING columns and zero rows for a header-only file", async () => {
    for (const file of ["a,b,c", "a,b,c\n", "a,b,c\r\n\r\n"]) {
      const result = await ingest(file);
      expect(typesOf(result)).toEqual({ a: "STRING", b: "STRING", c: "STRING" });
      expect(result.ok && result.rowCount).toBe(0);
    }
  });

  it("should name columns column_1... and count the first row as data without a header", async () => {
    const result = await ingest("1,x\n2,y\n", { dataOptions: { Header: false } });
    expect(typesOf(result)).toEqual({ column_1: "INTEGER", column_2: "STRING" });
    expect(result.ok && result.rowCount).toBe(2);
  });

  it("should trim header names, name blank ones by position and make repeated ones unique", async () => {
    const result = await ingest(" id ,,Name,name,NAME\n1,2,3,4,5\n");
    expect(result.ok && result.columns.map((c) => c.Name)).toEqual(["id", "column_2", "Name", "name_2", "NAME_3"]);
    const taken = await ingest("a,a_2,a,a,a_3\n1,2,3,4,5\n");
    expect(taken.ok && taken.columns.map((c) => c.Name)).toEqual(["a", "a_2", "a_3", "a_4", "a_3_2"]);
  });

  it("should refuse an empty file", async () => {
    expect(failureOf(await ingest(""))).toEqual({
      ok: false,
      status: 400,
      message: "The file is empty: a header row was expected (DataOptions.Header is true).",
    });
    expect(failureOf(await ingest("\n\n", { dataOptions: { Header: false } })).message).toBe(
      "The file is empty: there are no rows to generate a TableDefinition from.",
    );
  });

  it("should report rows with the wrong number of fields", async () => {
    const result = failureOf(await ingest("a,b,c,d\n1,2,3,4\n1,2,3\n"));
    expect(result.status).toBe(400);
    expect(result.message).toBe("Cannot generate a TableDefinition from the file: row 2 has 3 fields, expected 4.");
    expect(result.violations).toEqual([{ row: 2, message: "row 2 has 3 fields, expected 4" }]);
  });

  it("should suggest mixed line endings when a row of the wrong width holds a line break", async () => {
    const result = failureOf(await ingest("a,b\r\n1,2\n3,4\r\n"));
    expect(result.violations).toEqual([
      {
        row: 1,
        message:
          "row 1 has 3 fields (a value holds a line break: if the file mixes line endings, save it with one kind), expected 2",
      },
    ]);
  });
});

describe("ingestCsv: real-world CSV", () => {
  it("should read quoted commas, escaped quotes and line breaks, CRLF and non-ASCII text", async () => {
    const file = 'id,name,note\r\n1,"Smith, J","said ""hi""\r\nthen left"\r\n2,Zoë ✓ 東京,\r\n3,"",""\r\n';
    const result = await ingest(file, {
      tableDefinition: table(column("id", "INTEGER"), column("name", "STRING"), column("note", "STRING")),
    });
    expect(result).toMatchObject({ ok: true, rowCount: 3 });
  });

  it("should read a last row without a line break", async () => {
    expect(await ingest("a,b\n1,2")).toMatchObject({ ok: true, rowCount: 1 });
  });

  it("should ignore blank lines before the header and after the last row", async () => {
    const result = await ingest("\n\r\na,b\r\n1,2\r\n\r\n\r\n");
    expect(result).toMatchObject({ ok: true, rowCount: 1 });
  });

  it("should treat a blank line between rows as a row", async () => {
    const result = failureOf(await ingest("a,b\n1,2\n\n3,4\n"));
    expect(result.message).toBe(
      "Cannot generate a TableDefinition from the file: row 2 has 1 field (the line is blank), expected 2.",
    );
    const single = await ingest("a\n1\n\n3\n");
    expect(single).toMatchObject({ ok: true, rowCount: 3, columns: [column("a", "INTEGER")] });
  });

  it("should drop a UTF-8 byte order mark, raw or gzipped", async () => {
    const bytes = concatBytes(new Uint8Array([0xef, 0xbb, 0xbf]), utf8("id,name\n1,x\n"));
    for (const file of [bytes, await gzip(bytes)]) {
      for (const chunking of [1, 2, 1000]) {
        expect(typesOf(await ingest(file, {}, chunking))).toEqual({ id: "INTEGER", name: "STRING" });
      }
    }
  });

  it("should use a custom delimiter", async () => {
    const result = await ingest('a;b\t;c\n1;"x;y";2024-01-01\n', { dataOptions: { Delimiter: ";" } });
    expect(typesOf(result)).toEqual({ a: "INTEGER", b: "STRING", c: "DATE" });
    const tabs = await ingest("a\tb\n1,5\t2\n", { dataOptions: { Delimiter: "\t" } });
    expect(typesOf(tabs)).toEqual({ a: "STRING", b: "INTEGER" });
  });

  it("should say which delimiter it read the file with", async () => {
    expect(await ingest("a;b\n1;2\n", { dataOptions: { Delimiter: ";" } })).toMatchObject({ ok: true, delimiter: ";" });
    expect(await ingest("a,b\n1,2\n")).toMatchObject({ ok: true, delimiter: "," });
  });

  it("should read rows as wide as a table may be", async () => {
    const width = 2000;
    const header = Array.from({ length: width }, (_, i) => `c${i}`).join(",");
    const row = Array.from({ length: width }, (_, i) => (i % 2 ? `${i}.5` : `${i}`)).join(",");
    const result = await ingest(`${header}\n${row}\n${row}\n`, {}, 4096);
    expect(result.ok && result.rowCount).toBe(2);
    expect(result.ok && result.columns).toHaveLength(width);
    expect(result.ok && result.columns[1999]).toEqual(column("c1999", "DOUBLE"));
  });

  it("should refuse a header or first row wider than a table may be, without reading on", async () => {
    const wide = Array.from({ length: 2001 }, () => "").join(",");

    const withHeader = failureOf(await ingest(`${wide}\n${wide}\n"unclosed\n`));
    const without = failureOf(await ingest(`${wide}\n`, { dataOptions: { Header: false } }));

    expect(withHeader.status).toBe(400);
    expect(withHeader.message).toBe(
      "Cannot generate a TableDefinition from the file: the header row has 2001 fields; a table has at most 2000 columns.",
    );
    expect(withHeader.violations).toEqual([
      { row: 0, message: "the header row has 2001 fields; a table has at most 2000 columns" },
    ]);
    expect(without.violations).toEqual([
      { row: 0, message: "the first row has 2001 fields; a table has at most 2000 columns" },
    ]);
  });

  it("should refuse a header name longer than a column name may be, saying what to do if it is data", async () => {
    const result = failureOf(await ingest(`id,${"x".repeat(256)}\n1,2\n`));

    expect(result.violations).toEqual([
      {
        row: 0,
        message:
          "the header row's field 2 is 256 characters long, longer than a column name may be (255); if the file has no header row, send a Schema with DataOptions.Header false",
      },
    ]);
    expect(typesOf(await ingest(`id,${"x".repeat(255)}\n1,2\n`))).toHaveProperty("x".repeat(255), "INTEGER");
  });

  it("should give the same result wherever the bytes are cut, for CRLF, quoted line breaks and multi-byte text", async () => {
    const file = utf8('id,"na\r\nme",ok\r\n1,"Zoë, ""東京""\r\n✓",true\r\n2,"",FALSE\r\n3,ß,1');
    const whole = await ingest(file, {}, file.length);
    expect(whole).toMatchObject({ ok: true, rowCount: 3 });
    expect(typesOf(whole)).toEqual({ id: "INTEGER", "na\r\nme": "STRING", ok: "BOOLEAN" });
    for (let cut = 0; cut <= file.length; cut++) {
      expect(await ingest(file, {}, [cut]), `cut at ${cut}`).toEqual(whole);
    }
  });

  it("should give the same violations wherever the bytes are cut", async () => {
    const file = utf8('id,name,score,born\r\n1,"a\r\nb",x,2024-01-01\r\n,é,1.5,2024-02-30\r\n');
    const whole = await ingest(file, { tableDefinition: PEOPLE }, file.length);
    expect(failureOf(whole).violations).toHaveLength(3);
    for (let cut = 0; cut <= file.length; cut++) {
      expect(await ingest(file, { tableDefinition: PEOPLE }, [cut]), `cut at ${cut}`).toEqual(whole);
    }
  });

  it("should parse a large file fed in odd-sized chunks exactly", async () => {
    const lines = Array.from({ length: 30_000 }, (_, i) => `${i},"note ""${i}"",\r\nline two",${i % 2 === 0}`);
    const file = `id,note,even\r\n${lines.join("\r\n")}\r\n`;
    const check = table(column("id", "INTEGER", false), column("note", "STRING"), column("even", "BOOLEAN", false));
    for (const chunking of [1021, 65_537]) {
      expect(await ingest(file, { tableDefinition: check }, chunking)).toMatchObject({ ok: true, rowCount: 30_000 });
    }
  });
});

describe("ingestCsv: detecting the delimiter", () => {
  it.each([
    ["semicolons", ";", 'id;name;price;day\n1;"Smith; J";1,5;2024-01-02\n2;Zoë;;2024-01-03\n'],
    ["tabs", "\t", "id\tname\tprice\tday\n1\tSmith, J\t1.5\t2024-01-02\n2\tZoë\t\t2024-01-03\n"],
    ["bars", "|", "id|name|price|day\r\n1|Smith, J|1.5|2024-01-02\r\n2|Zoë||2024-01-03\r\n"],
  ])("should read a file separated by %s when the schema names no delimiter", async (_, delimiter, file) => {
    for (const chunking of [1, 7, file.length]) {
      const result = await ingest(file, {}, chunking);
      expect(result).toMatchObject({ ok: true, rowCount: 2, delimiter });
      expect(result.ok && result.columns.map((c) => c.Name)).toEqual(["id", "name", "price", "day"]);
      expect(typesOf(result).day).toBe("DATE");
    }
  });

  it("should keep the comma when the rows read the same with another delimiter", async () => {
    const result = await ingest("a,b;c\n1,2;3\n4,5;6\n");
    expect(result).toMatchObject({ ok: true, delimiter: "," });
    expect(result.ok && result.columns.map((c) => c.Name)).toEqual(["a", "b;c"]);
  });

  it("should respect quotes: a delimiter inside a quoted field does not count", async () => {
    const quotedSemicolons = await ingest('"a;b","c;d"\n"1;2","3;4"\n');
    expect(quotedSemicolons).toMatchObject({ ok: true, delimiter: "," });
    const quotedCommas = await ingest('name;note\n"x";"a,b,c"\n"y";"d,e"\n');
    expect(quotedCommas).toMatchObject({ ok: true, delimiter: ";" });
    expect(quotedCommas.ok && quotedCommas.columns.map((c) => c.Name)).toEqual(["name", "note"]);
  });

  it("should keep a one-column file whole, whatever its values hold", async () => {
    const result = await ingest("note\na;b\nc;d|e\n");
    expect(result).toMatchObject({ ok: true, delimiter: ",", rowCount: 2 });
    expect(typesOf(result)).toEqual({ note: "STRING" });
  });

  it("should fall back to the comma when no delimiter splits every row alike", async () => {
    expect(await ingest("a;b\n1;2;3\n4\n")).toMatchObject({
      ok: true,
      delimiter: ",",
      columns: [column("a;b", "STRING")],
    });
  });

  it("should detect it in a file without a header, a header-only file and a gzipped one", async () => {
    const headless = await ingest("1;x\n2;y\n", { dataOptions: { Header: false } });
    expect(typesOf(headless)).toEqual({ column_1: "INTEGER", column_2: "STRING" });
    expect(await ingest("a\tb")).toMatchObject({ ok: true, delimiter: "\t", rowCount: 0 });
    expect(await ingest(await gzip(utf8("\uFEFFa|b\n1|2\n")))).toMatchObject({ ok: true, delimiter: "|" });
  });

  it("should skip blank lines before the header and decide on the first rows", async () => {
    const rows = Array.from({ length: 30 }, (_, i) => `${i};x`).join("\r\n");
    const result = await ingest(`\r\n\r\na;b\r\n${rows}\r\n1;2;3\r\n`);
    // The odd row far below the first ones is reported, not read as one column.
    expect(failureOf(result).message).toBe(
      "Cannot generate a TableDefinition from the file: row 31 has 3 fields, expected 2.",
    );
  });

  it("should pick the delimiter that gives the TableDefinition's number of columns", async () => {
    const file = "a;b;c|d\n1;2;3|4\n";
    const three = table(column("a", "STRING"), column("b", "STRING"), column("c", "STRING"));
    expect(await ingest(file, { tableDefinition: three })).toMatchObject({ ok: true, delimiter: ";" });
    const two = table(column("a", "STRING"), column("b", "INTEGER"));
    expect(await ingest(file, { tableDefinition: two })).toMatchObject({ ok: true, delimiter: "|" });
  });

  it("should use the schema's delimiter when it names one, even if another splits the file", async () => {
    const result = await ingest("a;b\n1;2\n", { dataOptions: { Delimiter: "," } });
    expect(result).toMatchObject({ ok: true, delimiter: ",", columns: [column("a;b", "STRING")] });
  });
});

describe("ingestCsv: checking against a TableDefinition", () => {
  it("should accept a file that matches", async () => {
    const file = "id,name,score,born\n1,Ann,1.5,2000-01-01\n2,,,\n";
    const result = await ingest(file, { tableDefinition: PEOPLE });
    expect(result).toEqual({
      ok: true,
      rowCount: 2,
      columns: PEOPLE.Columns,
      deliveryType: "RAW",
      delimiter: ",",
      decompressedBytes: file.length,
      warnings: [],
    });
  });

  it("should not require header names to match the TableDefinition", async () => {
    expect(await ingest("a,b,c,d\n1,x,2,2024-01-01\n", { tableDefinition: PEOPLE })).toMatchObject({
      ok: true,
      rowCount: 1,
    });
  });

  it("should name the row, column and value of a violation, counting data rows from 1", async () => {
    const result = failureOf(
      await ingest("id,name,score,born\n1,a,1,2024-01-01\n2,b,abc,2024-01-01\n", { tableDefinition: PEOPLE }),
    );
    expect(result.status).toBe(400);
    expect(result.message).toBe(
      "The file does not match the TableDefinition: row 2, column 'score': 'abc' is not a valid DOUBLE (expected a decimal number such as 42, -1.5 or 6.02e23).",
    );
    expect(result.violations).toEqual([
      { row: 2, column: "score", value: "abc", message: expect.stringContaining("row 2, column 'score'") },
    ]);
  });

  it("should count rows from the first line when there is no header", async () => {
    const result = failureOf(
      await ingest("1,a,1,2024-01-01\nx,b,2,2024-01-01\n", { tableDefinition: PEOPLE, dataOptions: { Header: false } }),
    );
    expect(result.violations?.[0]).toMatchObject({ row: 2, column: "id", value: "x" });
  });

  it("should list several problems, each value and field count in its row", async () => {
    const file =
      "id,name,score,born\n" +
      "1,a,1,2024-01-01\n" +
      ",b,2,2024-01-01\n" +
      "3,c,3\n" +
      "4,d,4,2023-02-29\n" +
      "5,e,five,31/12/2024\n";
    const result = failureOf(await ingest(file, { tableDefinition: PEOPLE }));
    expect(result.violations?.map((v) => [v.row, v.column, v.value])).toEqual([
      [2, "id", ""],
      [3, undefined, undefined],
      [4, "born", "2023-02-29"],
      [5, "score", "five"],
      [5, "born", "31/12/2024"],
    ]);
    expect(result.message).toBe(
      "The file does not match the TableDefinition: " +
        "row 2, column 'id': the value is empty, but the column is not nullable; " +
        "row 3 has 3 fields, expected 4; " +
        "row 4, column 'born': '2023-02-29' is not a valid DATE (expected a date written YYYY-MM-DD); " +
        "row 5, column 'score': 'five' is not a valid DOUBLE (expected a decimal number such as 42, -1.5 or 6.02e23); " +
        "row 5, column 'born': '31/12/2024' is not a valid DATE (expected a date written YYYY-MM-DD) " +
        "(only the first 5 problems are listed).",
    );
  });

  it("should stop reading and cancel the upload once five problems are found", async () => {
    const rows = Array.from({ length: 50_000 }, (_, i) => `${i},n,bad,2024-01-01`).join("\n");
    const tracked = trackedStream(utf8(`id,name,score,born\n${rows}\n`), 1024);
    const result = failureOf(await ingestCsv(tracked.stream, { limits: LIMITS, tableDefinition: PEOPLE }));
    expect(result.violations?.map((v) => v.row)).toEqual([1, 2, 3, 4, 5]);
    expect(tracked.cancelled).toBe(true);
    expect(tracked.pulls).toBeLessThan(200);
  });

  it("should cut a long value in the message", async () => {
    const long = "y".repeat(1000);
    const result = failureOf(await ingest(`id,name,score,born\n1,a,${long},2024-01-01\n`, { tableDefinition: PEOPLE }));
    expect(result.message).toContain(`'${"y".repeat(60)}…' is not a valid DOUBLE`);
    expect(result.message.length).toBeLessThan(300);
    expect(result.violations?.[0]?.value).toBe(`${"y".repeat(200)}…`);
  });

  it("should escape line breaks in values and column names in the message", async () => {
    const check = table(column("a\nb", "INTEGER"));
    const result = failureOf(await ingest('x\n"1\r\n2"\n', { tableDefinition: check }));
    expect(result.message).toBe(
      "The file does not match the TableDefinition: row 1, column 'a\\nb': '1\\r\\n2' is not a valid INTEGER (expected a whole number from -9223372036854775808 to 9223372036854775807).",
    );
  });

  it("should report a header row with the wrong number of fields", async () => {
    const result = failureOf(await ingest("id,name\n1,a,1,2024-01-01\n", { tableDefinition: PEOPLE }));
    expect(result.violations).toEqual([
      { row: 0, message: "the header row has 2 fields, but the TableDefinition has 4 columns" },
    ]);
  });

  it("should accept an empty file without a header, and refuse one that lacks the header", async () => {
    expect(await ingest("", { tableDefinition: PEOPLE, dataOptions: { Header: false } })).toMatchObject({
      ok: true,
      rowCount: 0,
    });
    expect(failureOf(await ingest("", { tableDefinition: PEOPLE })).status).toBe(400);
  });

  it("should report broken quoting in its row", async () => {
    const result = failureOf(await ingest('id,name,score,born\n1,"a"b",1,2024-01-01\n', { tableDefinition: PEOPLE }));
    expect(result.violations).toEqual([
      { row: 1, message: expect.stringMatching(/^row 1: a quoted field is not closed properly/) },
    ]);
    const unclosed = failureOf(
      await ingest('id,name,score,born\n1,"open,1,2024-01-01\n2,b,2,2024-01-01\n', { tableDefinition: PEOPLE }),
    );
    expect(unclosed.violations?.[0]?.row).toBe(1);
  });

  it("should stop at a row longer than the limit instead of buffering the rest of the file", async () => {
    const tracked = trackedStream(utf8(`a,b\n1,"${"x".repeat(100_000)}`), 1000);
    const result = failureOf(await ingestCsv(tracked.stream, { limits: { ...LIMITS, maxRowChars: 10_000 } }));
    expect(result).toEqual({
      ok: false,
      status: 400,
      message:
        "The file has a row longer than 10000 characters (at data row 1); usually a quoted field is never closed.",
    });
    expect(tracked.cancelled).toBe(true);
  });
});

describe("ingestCsv: notes on how the file was read", () => {
  const SIX = table(
    column("date", "DATE"),
    column("precipitation", "DOUBLE"),
    column("temp_max", "DOUBLE"),
    column("temp_min", "DOUBLE"),
    column("wind", "DOUBLE"),
    column("weather", "STRING"),
  );
  const SEMICOLONS =
    "date;precipitation;temp_max;temp_min;wind;weather\n" +
    "2012-01-01;0.0;12.8;5.0;4.7;drizzle\n" +
    "2012-01-02;10.9;10.6;2.8;4.5;rain\n";

  it("should say that a file read with the Schema's comma looks ';'-delimited, and how to declare it", async () => {
    const result = failureOf(await ingest(SEMICOLONS, { tableDefinition: SIX, dataOptions: { Delimiter: "," } }));

    expect(result.message).toBe(
      "The file does not match the TableDefinition: the header row has 1 field, but the TableDefinition has 6 columns; " +
        "row 1 has 1 field, expected 6; row 2 has 1 field, expected 6. " +
        'The file looks ";"-delimited (6 fields a row), but was read with the Schema\'s Delimiter ",": declare it with ' +
        '{"DataSpecification": {"DataOptions": {"Delimiter": ";"}}} in the Schema, or leave Delimiter out to have it detected.',
    );
  });

  it("should say why a detected delimiter was not the one the file looks written with", async () => {
    const five = table(...SIX.Columns.slice(0, 5));
    const result = failureOf(await ingest(SEMICOLONS, { tableDefinition: five }));

    expect(result.message).toContain(
      'The file looks ";"-delimited (6 fields a row), but was read with ",", as the TableDefinition has 5 columns',
    );
  });

  it("should not blame the delimiter when the file's own delimiter splits its first rows evenly", async () => {
    const file = "a,b\n1,2\n3,4,5\n";
    expect(failureOf(await ingest(file)).message).toBe(
      "Cannot generate a TableDefinition from the file: row 2 has 3 fields, expected 2.",
    );
    expect(failureOf(await ingest("a,b\n1,2\n3,4\n", { tableDefinition: SIX })).message).not.toContain("looks");
  });

  it("should warn when a file read as one column looks written with another delimiter", async () => {
    const result = await ingest("a;b\n1;2\n", { dataOptions: { Delimiter: "," } });

    expect(result).toMatchObject({ ok: true, warnings: [expect.stringContaining('The file looks ";"-delimited')] });
  });

  it.each([
    ["JSON", '[\n  {"a": 1, "b": 2},\n  {"a": 3, "b": 4}\n]\n', '(it starts with "[")'],
    ["NDJSON", '{"a": 1, "b": 2}\n{"a": 3}\n', "NDJSON (one JSON object a line)"],
  ])("should say that %s sent as CSV does not look like CSV", async (_kind, file, said) => {
    const result = failureOf(await ingest(file));

    expect(result.message).toMatch(/^The file looks like .* not CSV .*: only CSV files are read/);
    expect(result.message).toContain(said);
    expect(result.message).toContain("Cannot generate a TableDefinition from the file: row");
  });

  it("should warn about JSON even when it happened to read as CSV", async () => {
    const result = await ingest('{"a":1}\n{"a":2}\n');

    expect(result).toMatchObject({ ok: true, warnings: [expect.stringContaining("looks like NDJSON")] });
  });

  it("should not take a CSV file whose first header starts with a bracket for JSON", async () => {
    expect(await ingest("[id],[name]\n1,a\n")).toMatchObject({ ok: true, warnings: [] });
  });

  it("should say which header names were changed", async () => {
    const result = await ingest("id,name,name,,value\n1,a,b,c,2\n");

    expect(result).toMatchObject({
      ok: true,
      warnings: [
        "2 header names were changed, as a table needs distinct, non-blank column names (letter case ignored): " +
          "column 3 'name' became 'name_2', column 4 (blank) became 'column_4'.",
      ],
    });
    expect(typesOf(result)).toEqual({
      id: "INTEGER",
      name: "STRING",
      name_2: "STRING",
      column_4: "STRING",
      value: "INTEGER",
    });
  });

  it("should list at most five changed names", async () => {
    const result = await ingest(`${Array(9).fill("x").join(",")}\n${Array(9).fill("1").join(",")}\n`);

    expect(result.ok && result.warnings[0]).toMatch(/^8 header names were changed.*'x_6', and 3 more\.$/);
  });

  it("should warn that the first row looks like data when a file without a header row is read with one", async () => {
    const file = "MSFT,Jan 1 2000,39.81\nMSFT,Feb 1 2000,36.35\nAAPL,Jan 1 2000,25.94\n";
    const result = await ingest(file);

    expect(result).toMatchObject({
      ok: true,
      warnings: [
        "The first row was taken as the header row, and its values became the column names, but it looks like data " +
          "('MSFT', 'Jan 1 2000', '39.81'): if the file has no header row, upload it again with " +
          '{"DataSpecification": {"DataOptions": {"Header": false}}} in the Schema.',
      ],
    });
    expect(await ingest(file, { dataOptions: { Header: false } })).toMatchObject({ ok: true, warnings: [] });
  });

  it("should warn that a first row of numbers and dates looks like data, and skipped, with a TableDefinition", async () => {
    expect(await ingest("1,2.5\n2,3.5\n")).toMatchObject({
      ok: true,
      warnings: [expect.stringContaining("('1', '2.5')")],
    });
    const two = table(column("day", "DATE"), column("n", "INTEGER"));
    expect(await ingest("2024-01-01,3\n2024-01-02,4\n", { tableDefinition: two })).toMatchObject({
      ok: true,
      warnings: [expect.stringContaining("taken as the header row, and it was not loaded, but it looks like data")],
    });
  });

  it("should not warn about a header row of names", async () => {
    expect(await ingest("symbol,date,price\nMSFT,Jan 1 2000,39.81\n")).toMatchObject({ ok: true, warnings: [] });
    expect(
      await ingest("id,day\n1,2024-01-01\n", {
        tableDefinition: table(column("id", "INTEGER"), column("day", "DATE")),
      }),
    ).toMatchObject({ ok: true, warnings: [] });
  });
});

describe("ingestCsv: gzip", () => {
  const CSV = "id,name\n1,a\n2,b\n";

  it("should recognise gzip by its magic bytes and report the decompressed size", async () => {
    const compressed = await gzip(utf8(CSV));
    for (const chunking of [1, 3, 4096]) {
      const result = await ingest(compressed, {}, chunking);
      expect(result).toEqual({ ...(await ingest(CSV)), deliveryType: "GZIP" });
      expect(result.ok && result.decompressedBytes).toBe(utf8(CSV).length);
    }
  });

  it("should treat a file that only starts with 0x1f as raw CSV", async () => {
    const result = await ingest(utf8("\u001f,b\n1,2\n"), {}, 1);
    expect(result).toMatchObject({ ok: true, deliveryType: "RAW" });
  });

  it("should stop a gzip bomb at the size limit without reading the rest of the upload", async () => {
    const bomb = await gzip(utf8(`a\n${"1\n".repeat(10 * 1024 * 1024)}`));
    const tracked = trackedStream(bomb, 256);
    const result = await ingestCsv(tracked.stream, { limits: { maxDecompressedBytes: 1024 * 1024 } });
    expect(result).toEqual({
      ok: false,
      status: 413,
      message: "The file is larger than the limit of 1048576 bytes once decompressed.",
    });
    expect(tracked.bytesServed).toBeLessThan(bomb.length / 4);
    expect(tracked.cancelled).toBe(true);
  });

  it("should refuse a raw file over the size limit with 413", async () => {
    const result = await ingest(`a\n${"1\n".repeat(1000)}`, { limits: { maxDecompressedBytes: 1000 } });
    expect(result).toEqual({ ok: false, status: 413, message: "The file is larger than the limit of 1000 bytes." });
  });

  it("should report truncated and corrupt gzip data", async () => {
    const compressed = await gzip(utf8(CSV.repeat(100)));
    expect(failureOf(await ingest(compressed.slice(0, compressed.length - 10)))).toEqual({
      ok: false,
      status: 400,
      message:
        "The file starts like gzip but cannot be decompressed: the gzip data ends too early (the file is truncated).",
    });
    const corrupt = compressed.slice();
    corrupt.fill(0xff, 10, 30);
    expect(failureOf(await ingest(corrupt)).message).toMatch(/^The file starts like gzip but cannot be decompressed: /);
    expect(failureOf(await ingest(concatBytes(compressed, utf8("junk")))).message).toBe(
      "The file starts like gzip but cannot be decompressed: there are extra bytes after the end of the gzip data.",
    );
  });

  it("should check the gzip trailer, so a file cut inside it or with a wrong checksum is refused", async () => {
    const compressed = await gzip(utf8(CSV.repeat(100)));
    for (const cut of [1, 4, 8]) {
      expect(failureOf(await ingest(compressed.slice(0, compressed.length - cut))).message, `cut ${cut}`).toBe(
        "The file starts like gzip but cannot be decompressed: its checksum does not match the data (the file is damaged or truncated).",
      );
    }
    const badChecksum = compressed.slice();
    badChecksum[badChecksum.length - 6]! ^= 0xff;
    expect(failureOf(await ingest(badChecksum)).status).toBe(400);
  });

  it("should read gzip files made of several members, as zlib does", async () => {
    const twoMembers = concatBytes(await gzip(utf8("id,name\n1,a\n")), await gzip(utf8("2,b\n3,c\n")));
    expect(await ingest(twoMembers, {}, 5)).toMatchObject({ ok: true, rowCount: 3, deliveryType: "GZIP" });
  });

  it("should cancel the upload when the gzip data is corrupt", async () => {
    const compressed = await gzip(utf8(CSV.repeat(10_000)));
    const corrupt = compressed.slice();
    corrupt.fill(0, 10, 200);
    const tracked = trackedStream(corrupt, 64);
    expect((await ingestCsv(tracked.stream, { limits: LIMITS })).ok).toBe(false);
    expect(tracked.cancelled || tracked.bytesServed === corrupt.length).toBe(true);
  });
});

describe("ingestCsv: limits inside one large chunk", () => {
  // A decompressed chunk can be megabytes; each limit must stop the check where it is crossed, not at the chunk's end.
  const HUGE = 8 * 1024 * 1024;

  async function ingestCounted(chunks: readonly Uint8Array[], options: Partial<IngestOptions>) {
    const work: WorkCounter = { scanned: 0 };
    const bytes = concatBytes(...chunks);
    const cuts = chunks.slice(0, -1).map((_, index) => chunks.slice(0, index + 1).reduce((n, c) => n + c.length, 0));
    const tracked = trackedStream(bytes, cuts);
    const result = await ingestCsv(tracked.stream, { limits: LIMITS, ...options, work });
    return { result, work: work.scanned, cancelled: tracked.cancelled };
  }

  it("should refuse a file whose size crosses the limit at a chunk's first byte without looking at that chunk", async () => {
    const { result, work, cancelled } = await ingestCounted([utf8("a\n1\n"), utf8("2\n".repeat(HUGE / 2))], {
      limits: { maxDecompressedBytes: 5 },
    });
    expect(result).toEqual({ ok: false, status: 413, message: "The file is larger than the limit of 5 bytes." });
    expect(work).toBeLessThan(100);
    expect(cancelled).toBe(true);
  });

  it("should stop a gzip bomb having looked at no more than the limit", async () => {
    const limit = 1024 * 1024;
    const bomb = await gzip(utf8(`a\n${"1\n".repeat(HUGE * 2)}`));
    const { result, work } = await ingestCounted([bomb], { limits: { maxDecompressedBytes: limit } });
    expect(failureOf(result).status).toBe(413);
    expect(work).toBeLessThan(8 * limit);
  });

  it("should refuse a row longer than maxRowChars inside one chunk without reading far past it", async () => {
    const maxRowChars = 10_000;
    for (const file of [`a,b\n1,"${"x".repeat(HUGE)}`, `a,b\n1,${"x".repeat(HUGE)}\n2,3\n`, "y".repeat(HUGE)]) {
      const { result, work } = await ingestCounted([utf8(file)], { limits: { ...LIMITS, maxRowChars } });
      expect(failureOf(result).message).toMatch(/^The file has a row longer than 10000 characters/);
      // A step of 64 KiB is decoded at a time; the rows are read no further than one row's length.
      expect(work).toBeLessThan(2 * 64 * 1024 + 10 * maxRowChars);
    }
  });

  it("should refuse a complete row longer than maxRowChars however the file is cut", async () => {
    const file = utf8(`a,b\n1,${"x".repeat(20_000)}\n2,3\n`);
    for (const chunking of [file.length, 7, 4096, [20_003]]) {
      expect(await ingest(file, { limits: { ...LIMITS, maxRowChars: 10_000 } }, chunking)).toEqual({
        ok: false,
        status: 400,
        message:
          "The file has a row longer than 10000 characters (at data row 1); usually a quoted field is never closed.",
      });
    }
    expect(await ingest(file, { limits: { ...LIMITS, maxRowChars: 20_002 } })).toMatchObject({ ok: true, rowCount: 2 });
  });

  it("should stop at the fifth problem inside one chunk without reading the rest of it", async () => {
    const { result, work } = await ingestCounted([utf8(`n\n${"x\n".repeat(HUGE / 2)}`)], {
      tableDefinition: table(column("n", "INTEGER")),
    });
    expect(failureOf(result).violations?.map((violation) => violation.row)).toEqual([1, 2, 3, 4, 5]);
    // One step of 64 KiB looked at a few times (decoded, its code units copied, searched), not the 8 MiB.
    expect(work).toBeLessThan(5 * 64 * 1024);
  });
});

describe("ingestCsv: text encoding", () => {
  it("should decode multi-byte characters split across chunks", async () => {
    const result = await ingest("名前,値\n東京,1\n😀,2\n", {}, 1);
    expect(typesOf(result)).toEqual({ 名前: "STRING", 値: "INTEGER" });
  });

  it("should name the offset and row of invalid UTF-8", async () => {
    const latin1 = concatBytes(utf8("name,city\nAnn,Paris\nBob,Z"), new Uint8Array([0xfc]), utf8("rich\n"));
    for (const chunking of [1, 5, 1000]) {
      expect(failureOf(await ingest(latin1, {}, chunking))).toEqual({
        ok: false,
        status: 400,
        message:
          "The file is not valid UTF-8: byte 0xFC at byte offset 25, in data row 2 is not part of a valid character. Save the file as UTF-8 and upload it again.",
      });
    }
  });

  it("should find the bad byte when a character is cut short across chunks", async () => {
    const bytes = concatBytes(utf8("h\nab"), new Uint8Array([0xe6, 0x9d]), utf8("x\n"));
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(failureOf(await ingest(bytes, {}, [cut])).message, `cut at ${cut}`).toContain(
        "byte 0xE6 at byte offset 4, in data row 1",
      );
    }
  });

  it("should report the problems before an invalid byte rather than the byte, however the file is cut", async () => {
    const tooLong = concatBytes(utf8(`a\n"${"x".repeat(2000)}`), new Uint8Array([0xff]), utf8('"\n'));
    const badValues = concatBytes(utf8(`n\n${"x\n".repeat(6)}`), new Uint8Array([0xff]), utf8("\n"));
    for (const chunking of [1, 100, 5000]) {
      expect(failureOf(await ingest(tooLong, { limits: { ...LIMITS, maxRowChars: 1000 } }, chunking)).message).toBe(
        "The file has a row longer than 1000 characters (at data row 1); usually a quoted field is never closed.",
      );
      const violations = failureOf(
        await ingest(badValues, { tableDefinition: table(column("n", "INTEGER")) }, chunking),
      );
      expect(violations.violations?.map((violation) => violation.row)).toEqual([1, 2, 3, 4, 5]);
    }
  });

  it("should say so when the file ends inside a character", async () => {
    const bytes = concatBytes(utf8("h\nab"), new Uint8Array([0xe6, 0x9d]));
    expect(failureOf(await ingest(bytes, {}, 1)).message).toBe(
      "The file is not valid UTF-8: it ends in the middle of a character (at byte offset 4, in data row 1). Save the file as UTF-8 and upload it again.",
    );
  });

  it("should point into the header row and into gzipped data", async () => {
    const bytes = concatBytes(utf8("na"), new Uint8Array([0xff]), utf8("me\n1\n"));
    expect(failureOf(await ingest(bytes)).message).toContain("byte 0xFF at byte offset 2, in the header row");
    expect(failureOf(await ingest(await gzip(bytes))).message).toContain(
      "byte offset 2 of the decompressed data, in the header row",
    );
  });
});

describe("ingestCsv: stream contract", () => {
  it("should read the upload to its end on success, so a tee sibling gets every byte", async () => {
    const bytes = utf8(`a,b\n${"1,2\n".repeat(50_000)}`);
    const [mine, theirs] = trackedStream(bytes, 1000).stream.tee();
    const [result, copied] = await Promise.all([
      ingestCsv(mine, { limits: LIMITS }),
      new Response(theirs).arrayBuffer(),
    ]);
    expect(result).toMatchObject({ ok: true, rowCount: 50_000 });
    expect(new Uint8Array(copied)).toEqual(bytes);
  });

  it("should cancel its branch of a tee on failure and leave the sibling whole", async () => {
    const bytes = await gzip(utf8(`a\n${"x\n".repeat(300_000)}`));
    const tracked = trackedStream(bytes, 512);
    const [mine, theirs] = tracked.stream.tee();
    const result = await ingestCsv(mine, { limits: { maxDecompressedBytes: 10_000 } });
    expect(result.ok).toBe(false);
    expect(new Uint8Array(await new Response(theirs).arrayBuffer())).toEqual(bytes);
    expect(tracked.bytesServed).toBe(bytes.length);
  });

  it("should copy the bytes exactly as uploaded to copyTo and close it on success", async () => {
    const bytes = await gzip(utf8(`a,b\n${"1,2\n".repeat(20_000)}`));
    const copy = new TransformStream<Uint8Array, Uint8Array>();
    const [result, copied] = await Promise.all([
      ingestCsv(trackedStream(bytes, 333).stream, { limits: LIMITS, copyTo: copy.writable }),
      new Response(copy.readable).arrayBuffer(),
    ]);
    expect(result).toMatchObject({ ok: true, rowCount: 20_000, deliveryType: "GZIP" });
    expect(new Uint8Array(copied)).toEqual(bytes);
  });

  it("should abort copyTo when the file is refused, even after reading all of it", async () => {
    const copy = new TransformStream<Uint8Array, Uint8Array>();
    const copied = new Response(copy.readable).arrayBuffer();
    const result = await ingest("a,b\n1,2\n3\n", { copyTo: copy.writable });
    expect(result.ok).toBe(false);
    await expect(copied).rejects.toThrow("row 2 has 1 field, expected 2");
  });

  it("should read the upload no faster than copyTo takes it", async () => {
    const tracked = trackedStream(utf8(`a\n${"1\n".repeat(5000)}`), 100);
    let written = 0;
    let mostAhead = 0;
    const slow = new WritableStream<Uint8Array>({
      async write() {
        written++;
        mostAhead = Math.max(mostAhead, tracked.pulls - written);
        await new Promise((resolve) => setTimeout(resolve, 0));
      },
    });
    expect(await ingestCsv(tracked.stream, { limits: LIMITS, copyTo: slow })).toMatchObject({
      ok: true,
      rowCount: 5000,
    });
    expect(written).toBe(tracked.pulls);
    expect(mostAhead).toBeLessThanOrEqual(1);
  });

  it("should throw the upload's own error, raw or gzipped, instead of calling the file corrupt", async () => {
    const disconnect = new Error("client went away");
    const raw = utf8("a,b\n1,2\n");
    await expect(ingestCsv(failingStream(raw, disconnect), { limits: LIMITS })).rejects.toBe(disconnect);
    const compressed = (await gzip(utf8("a,b\n1,2\n".repeat(1000)))).slice(0, 100);
    await expect(ingestCsv(failingStream(compressed, disconnect), { limits: LIMITS })).rejects.toBe(disconnect);
  });
});

describe('ingestCsv: an empty field and a quoted ""', () => {
  const NAMED = table(column("id", "INTEGER", false), column("name", "STRING", false), column("n", "INTEGER", false));
  // A first row with a quote inside an unquoted field leaves it and the rows after it to the fallback reader.
  const READINGS = { "fast path": "", fallback: '0,a"b,1\n' };

  for (const [reading, first] of Object.entries(READINGS)) {
    const offset = first === "" ? 0 : 1;

    it(`should take a quoted "" as a value in a STRING column that is not nullable (${reading})`, async () => {
      const result = await ingest(`id,name,n\n${first}1,"",2\n2,"x",3\n`, { tableDefinition: NAMED }, 1 << 20);
      expect(result).toMatchObject({ ok: true, rowCount: 2 + offset });
    });

    it(`should refuse an unquoted empty field there, and a quoted "" in an INTEGER column (${reading})`, async () => {
      const file = `id,name,n\n${first}1,,2\n2,"x",""\n`;
      const result = failureOf(await ingest(file, { tableDefinition: NAMED }, 1 << 20));
      expect(result.violations?.map((v) => [v.row, v.column])).toEqual([
        [1 + offset, "name"],
        [2 + offset, "n"],
      ]);
    });
  }

  it('should count a quoted "" as empty when generating types', async () => {
    expect(typesOf(await ingest('a,b\n1,""\n"",x\n2,y\n'))).toEqual({ a: "INTEGER", b: "STRING" });
  });

  it('should take a line holding only "" as a row (the empty string), where a blank line at the end is nothing', async () => {
    expect(await ingest('name\nx\n""\n""\n\n\n')).toMatchObject({ ok: true, rowCount: 3 });
  });
});

import { describe, expect, it } from "vitest";
import { csvField, CsvResultWriter, StorageClass } from "../../src/worker/query/result/csv";

describe("csvField", () => {
  it("should write NULL as an empty field", () => {
    expect(csvField(null, StorageClass.Null)).toBe("");
  });

  it.each([
    [0n, "0"],
    [-42n, "-42"],
    [9007199254740993n, "9007199254740993"],
    [-9223372036854775808n, "-9223372036854775808"],
  ])("should write the INTEGER %s exactly", (value, text) => {
    expect(csvField(value, StorageClass.Integer)).toBe(text);
  });

  it.each([
    [2, "2.0"],
    [-3, "-3.0"],
    [0, "0.0"],
    [0.1, "0.1"],
    [-2.5, "-2.5"],
    [1 / 3, "0.3333333333333333"],
    [1e21, "1e+21"],
    [1.5e-7, "1.5e-7"],
    [Infinity, "Infinity"],
  ])("should write the REAL %s as %s", (value, text) => {
    expect(csvField(value, StorageClass.Float)).toBe(text);
  });

  it("should write every REAL so that it reads back as the same number", () => {
    for (const value of [0.1 + 0.2, Math.PI, -1e-300, 123456789.123456789, 2 ** 60])
      expect(Number(csvField(value, StorageClass.Float))).toBe(value);
  });

  it.each([
    ["plain", "plain"],
    ["", '""'],
    ["a,b", '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ["line1\nline2", '"line1\nline2"'],
    ["cr\r", '"cr\r"'],
    [" padded ", " padded "],
    ["日本 ✓", "日本 ✓"],
  ])("should write the text %j as %j", (value, text) => {
    expect(csvField(value, StorageClass.Text)).toBe(text);
  });

  it("should write a BLOB as hexadecimal", () => {
    expect(csvField(new Uint8Array([0, 15, 255]), StorageClass.Blob)).toBe("000fff");
  });
});

describe("CsvResultWriter", () => {
  function collecting(): { writer: CsvResultWriter; chunks: Uint8Array[]; text: () => string } {
    const chunks: Uint8Array[] = [];
    const writer = new CsvResultWriter(async (bytes) => {
      chunks.push(bytes);
    });
    return { writer, chunks, text: () => chunks.map((chunk) => new TextDecoder().decode(chunk)).join("") };
  }

  it("should write a header row quoted as fields are, and \\n after every line", async () => {
    const { writer, text } = collecting();

    await writer.header(["id", "a,b", 'say "x"']);
    await writer.line("1,2,3");
    await writer.flush();

    expect(text()).toBe('id,"a,b","say ""x"""\n1,2,3\n');
  });

  it("should count the size in UTF-8 bytes, written or not", async () => {
    const { writer, chunks } = collecting();

    await writer.header(["ü"]);
    await writer.line("日本");

    expect(writer.size).toBe(3 + 7);
    expect(writer.flushedSize).toBe(0);
    expect(chunks).toEqual([]);
    await writer.flush();
    expect(writer.flushedSize).toBe(10);
  });

  it("should hand the result on in blocks instead of holding it whole", async () => {
    const { writer, chunks, text } = collecting();
    const line = "x".repeat(1000);

    for (let i = 0; i < 200; i++) await writer.line(line);
    await writer.flush();

    expect(chunks.length).toBeGreaterThan(2);
    expect(Math.max(...chunks.map((chunk) => chunk.byteLength))).toBeLessThan(70 * 1024);
    expect(text()).toBe(`${line}\n`.repeat(200));
    expect(writer.size).toBe(200 * 1001);
  });

  it("should write nothing for an empty flush", async () => {
    const { writer, chunks } = collecting();

    await writer.flush();

    expect(chunks).toEqual([]);
  });
});

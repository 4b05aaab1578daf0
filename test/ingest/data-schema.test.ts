import { describe, expect, it } from "vitest";
import {
  completeSchema,
  parseForceGenerate,
  parseSchemaPart,
  serializeSchema,
  tableDefinitionToCheck,
  type DataSchema,
} from "../../src/worker/ingest/data-schema";

function schemaOf(json: unknown): DataSchema {
  const result = parseSchemaPart(JSON.stringify(json));
  if (!result.ok) throw new Error(`expected a valid schema, got: ${result.message}`);
  return result.schema;
}

function messageOf(text: string): string {
  const result = parseSchemaPart(text);
  if (result.ok) throw new Error("expected the schema to be refused");
  return result.message;
}

function columns(...types: unknown[]): unknown {
  return { Columns: types.map((type, index) => ({ Name: `c${index}`, DataType: { DataType: type } })) };
}

describe("parseSchemaPart", () => {
  it("should read a full schema as written", () => {
    const schema = schemaOf({
      SchemaVersion: "1.0",
      TableDefinition: {
        Columns: [
          { Name: "id", DataType: { DataType: "INTEGER", DataTypeOptions: { Nullable: false } } },
          { Name: "name", DataType: { DataType: "STRING" } },
        ],
      },
      DataSpecification: { FormatType: "CSV", DeliveryType: "GZIP", DataOptions: { Header: false, Delimiter: ";" } },
    });
    expect(schema).toEqual({
      SchemaVersion: "1.0",
      TableDefinition: {
        Columns: [
          { Name: "id", DataType: { DataType: "INTEGER", DataTypeOptions: { Nullable: false } } },
          { Name: "name", DataType: { DataType: "STRING", DataTypeOptions: { Nullable: true } } },
        ],
      },
      DataSpecification: { FormatType: "CSV", DeliveryType: "GZIP", DataOptions: { Header: false, Delimiter: ";" } },
    });
  });

  it("should fill in every default for an empty object, leaving the delimiter to be detected", () => {
    expect(schemaOf({})).toEqual({
      SchemaVersion: "1.0",
      DataSpecification: { FormatType: "CSV", DataOptions: { Header: true } },
    });
  });

  it("should treat a blank part as no schema at all", () => {
    expect(parseSchemaPart("  \n")).toEqual({ ok: true, schema: schemaOf({}) });
  });

  it("should treat null fields as absent", () => {
    const schema = schemaOf({
      SchemaVersion: null,
      TableDefinition: null,
      DataSpecification: { DeliveryType: null, DataOptions: { Header: null, Delimiter: null } },
    });
    expect(schema).toEqual(schemaOf({}));
  });

  it("should accept type and format names in any letter case and store them in upper case", () => {
    const schema = schemaOf({
      TableDefinition: columns("integer", "Timestamp"),
      DataSpecification: { FormatType: "csv", DeliveryType: "gzip" },
    });
    expect(schema.TableDefinition?.Columns.map((column) => column.DataType.DataType)).toEqual(["INTEGER", "TIMESTAMP"]);
    expect(schema.DataSpecification.FormatType).toBe("CSV");
    expect(schema.DataSpecification.DeliveryType).toBe("GZIP");
  });

  it("should report text that is not JSON", () => {
    expect(messageOf("{ not json")).toMatch(/^Schema is not valid JSON: /);
  });

  it("should report JSON that is not an object", () => {
    expect(messageOf("[]")).toBe("Schema: expected an object, got an array");
    expect(messageOf('"x"')).toBe("Schema: expected an object, got the string 'x'");
  });

  it("should name the path and the allowed values of an unknown type", () => {
    expect(messageOf(JSON.stringify({ TableDefinition: columns("STRING", "STRING", "FOO") }))).toBe(
      "Schema.TableDefinition.Columns[2].DataType.DataType: unknown type 'FOO'; expected one of STRING, INTEGER, DOUBLE, BOOLEAN, DATE, TIMESTAMP",
    );
  });

  it("should report a missing DataType and a DataType given as a plain string", () => {
    const missing = { TableDefinition: { Columns: [{ Name: "a" }] } };
    expect(messageOf(JSON.stringify(missing))).toBe("Schema.TableDefinition.Columns[0].DataType: is required");
    const plain = { TableDefinition: { Columns: [{ Name: "a", DataType: "INTEGER" }] } };
    expect(messageOf(JSON.stringify(plain))).toBe(
      "Schema.TableDefinition.Columns[0].DataType: expected an object, got the string 'INTEGER'",
    );
  });

  it("should refuse empty and duplicate column names, ignoring letter case", () => {
    const table = {
      Columns: [
        { Name: "id", DataType: { DataType: "INTEGER" } },
        { Name: " ", DataType: { DataType: "STRING" } },
        { Name: "ID", DataType: { DataType: "STRING" } },
      ],
    };
    expect(messageOf(JSON.stringify({ TableDefinition: table }))).toBe(
      "Schema.TableDefinition.Columns[1].Name: a column name must not be empty; " +
        "Schema.TableDefinition.Columns[2].Name: duplicate column name 'ID' (same as Columns[0]; names are compared ignoring letter case)",
    );
  });

  it("should refuse a column name over 255 characters and more than 2000 columns", () => {
    const named = (name: string) => ({ Name: name, DataType: { DataType: "STRING" } });
    const long = { Columns: [named("x".repeat(256))] };
    const wide = { Columns: Array.from({ length: 2001 }, (_, i) => named(`c${i}`)) };

    expect(messageOf(JSON.stringify({ TableDefinition: long }))).toBe(
      "Schema.TableDefinition.Columns[0].Name: a column name may be at most 255 characters long",
    );
    expect(messageOf(JSON.stringify({ TableDefinition: wide }))).toBe(
      "Schema.TableDefinition.Columns: a table has at most 2000 columns",
    );
  });

  it("should refuse a table without columns", () => {
    expect(messageOf(JSON.stringify({ TableDefinition: { Columns: [] } }))).toBe(
      "Schema.TableDefinition.Columns: a table needs at least one column",
    );
  });

  it("should refuse unknown fields and suggest the right spelling", () => {
    const schema = {
      TableDefinition: {
        Columns: [{ Name: "a", DataType: { DataType: "STRING", DataTypeOptions: { nullable: false } } }],
      },
    };
    expect(messageOf(JSON.stringify(schema))).toBe(
      "Schema.TableDefinition.Columns[0].DataType.DataTypeOptions: unknown field 'nullable' (did you mean 'Nullable'?); allowed: Nullable, StoredAs",
    );
    expect(messageOf(JSON.stringify({ Extra: 1, Other: 2 }))).toBe(
      "Schema: unknown fields 'Extra', 'Other'; allowed: SchemaVersion, TableDefinition, DataSpecification",
    );
  });

  it("should refuse a wrongly typed option", () => {
    const schema = {
      TableDefinition: {
        Columns: [{ Name: "a", DataType: { DataType: "STRING", DataTypeOptions: { Nullable: "no" } } }],
      },
    };
    expect(messageOf(JSON.stringify(schema))).toBe(
      "Schema.TableDefinition.Columns[0].DataType.DataTypeOptions.Nullable: expected true or false, got the string 'no'",
    );
    expect(messageOf(JSON.stringify({ DataSpecification: { DataOptions: { Header: 1 } } }))).toBe(
      "Schema.DataSpecification.DataOptions.Header: expected true or false, got number 1",
    );
  });

  it("should accept the StoredAs the service writes, and not keep it", () => {
    const schema = schemaOf({
      TableDefinition: {
        Columns: [
          {
            Name: "at",
            DataType: { DataType: "TIMESTAMP", DataTypeOptions: { StoredAs: "YYYY-MM-DD HH:MM:SS[.fff]" } },
          },
          { Name: "day", DataType: { DataType: "date", DataTypeOptions: { Nullable: false, StoredAs: "YYYY-MM-DD" } } },
          { Name: "ok", DataType: { DataType: "BOOLEAN", DataTypeOptions: { StoredAs: null } } },
        ],
      },
    });
    expect(schema.TableDefinition?.Columns.map((column) => column.DataType)).toEqual([
      { DataType: "TIMESTAMP", DataTypeOptions: { Nullable: true } },
      { DataType: "DATE", DataTypeOptions: { Nullable: false } },
      { DataType: "BOOLEAN", DataTypeOptions: { Nullable: true } },
    ]);
  });

  it("should refuse a StoredAs that is not how the type is stored", () => {
    const column = (DataType: string, StoredAs: string) => ({
      TableDefinition: { Columns: [{ Name: "c", DataType: { DataType, DataTypeOptions: { StoredAs } } }] },
    });
    expect(messageOf(JSON.stringify(column("TIMESTAMP", "YYYY-MM-DDTHH:MM:SS[.fff][Z]")))).toBe(
      "Schema.TableDefinition.Columns[0].DataType.DataTypeOptions.StoredAs: TIMESTAMP values are stored as " +
        "'YYYY-MM-DD HH:MM:SS[.fff]'; StoredAs only reports it and cannot change it (leave it out)",
    );
    expect(messageOf(JSON.stringify(column("STRING", "text")))).toBe(
      "Schema.TableDefinition.Columns[0].DataType.DataTypeOptions.StoredAs: STRING values are stored as written; " +
        "StoredAs only reports how BOOLEAN, DATE, TIMESTAMP are stored (leave it out)",
    );
  });

  it("should accept a one-character delimiter, tab included", () => {
    expect(
      schemaOf({ DataSpecification: { DataOptions: { Delimiter: "\t" } } }).DataSpecification.DataOptions.Delimiter,
    ).toBe("\t");
  });

  it.each([
    ["", "must be exactly one character, got ''"],
    [";;", "must be exactly one character, got ';;'"],
    ['"', "cannot be a double quote, a line break or a byte order mark"],
    ["\n", "cannot be a double quote, a line break or a byte order mark"],
  ])("should refuse the delimiter %j", (delimiter, reason) => {
    expect(messageOf(JSON.stringify({ DataSpecification: { DataOptions: { Delimiter: delimiter } } }))).toBe(
      `Schema.DataSpecification.DataOptions.Delimiter: ${reason}`,
    );
  });

  it("should refuse other versions, formats and delivery types", () => {
    expect(messageOf(JSON.stringify({ SchemaVersion: "2.0" }))).toBe(
      `Schema.SchemaVersion: unsupported version '2.0'; expected "1.0"`,
    );
    expect(messageOf(JSON.stringify({ SchemaVersion: 1 }))).toBe(
      "Schema.SchemaVersion: expected a string, got number 1",
    );
    expect(messageOf(JSON.stringify({ DataSpecification: { FormatType: "PARQUET" } }))).toBe(
      "Schema.DataSpecification.FormatType: unknown format 'PARQUET'; expected one of CSV",
    );
    expect(messageOf(JSON.stringify({ DataSpecification: { DeliveryType: "ZIP" } }))).toBe(
      "Schema.DataSpecification.DeliveryType: unknown delivery type 'ZIP'; expected one of RAW, GZIP",
    );
  });

  it("should list at most five problems", () => {
    const message = messageOf(JSON.stringify({ TableDefinition: columns("A", "B", "C", "D", "E", "F", "G") }));
    expect(message.split("; Schema.")).toHaveLength(5);
    expect(message).toMatch(/; and 2 more$/);
  });

  it("should cut a very long value in the message", () => {
    const message = messageOf(JSON.stringify({ TableDefinition: columns("X".repeat(500)) }));
    expect(message).toContain(`unknown type '${"X".repeat(60)}…'`);
    expect(message.length).toBeLessThan(250);
  });
});

describe("parseForceGenerate", () => {
  it.each([
    ["true", true],
    ["false", false],
    [" TRUE ", true],
    ["False\n", false],
  ])("should read %j", (text, value) => {
    expect(parseForceGenerate(text)).toEqual({ ok: true, value });
  });

  it.each(["", "yes", "1", "truthy"])("should refuse %j", (text) => {
    expect(parseForceGenerate(text)).toEqual({
      ok: false,
      message: `ForceGenerateTableDefinition must be true or false, got '${text}'`,
    });
  });
});

describe("tableDefinitionToCheck", () => {
  it("should check the given table unless generation is forced", () => {
    const schema = schemaOf({ TableDefinition: columns("INTEGER") });
    expect(tableDefinitionToCheck(schema, false)).toBe(schema.TableDefinition);
    expect(tableDefinitionToCheck(schema, true)).toBeUndefined();
    expect(tableDefinitionToCheck(schemaOf({}), false)).toBeUndefined();
  });
});

describe("serializeSchema", () => {
  it("should write the canonical JSON with the generated table, detected delivery type and delimiter", () => {
    const stored = completeSchema(schemaOf({ DataSpecification: { DeliveryType: "RAW" } }), {
      columns: [
        { Name: "id", DataType: { DataType: "INTEGER", DataTypeOptions: { Nullable: true } } },
        { Name: "when", DataType: { DataType: "DATE", DataTypeOptions: { Nullable: true } } },
      ],
      deliveryType: "GZIP",
      delimiter: ";",
    });
    expect(serializeSchema(stored)).toBe(
      '{"SchemaVersion":"1.0","TableDefinition":{"Columns":[' +
        '{"Name":"id","DataType":{"DataType":"INTEGER","DataTypeOptions":{"Nullable":true}}},' +
        '{"Name":"when","DataType":{"DataType":"DATE","DataTypeOptions":{"Nullable":true,"StoredAs":"YYYY-MM-DD"}}}]},' +
        '"DataSpecification":{"FormatType":"CSV","DeliveryType":"GZIP","DataOptions":{"Header":true,"Delimiter":";"}}}',
    );
  });

  it("should say how BOOLEAN, DATE and TIMESTAMP values are stored, and nothing for the other types", () => {
    const schema = schemaOf({
      TableDefinition: columns("STRING", "INTEGER", "DOUBLE", "BOOLEAN", "DATE", "TIMESTAMP"),
    });
    const stored = completeSchema(schema, {
      columns: schema.TableDefinition!.Columns,
      deliveryType: "RAW",
      delimiter: ",",
    });
    const written = JSON.parse(serializeSchema(stored)) as {
      TableDefinition: { Columns: { DataType: { DataTypeOptions: Record<string, unknown> } }[] };
    };
    expect(written.TableDefinition.Columns.map((column) => column.DataType.DataTypeOptions.StoredAs)).toEqual([
      undefined,
      undefined,
      undefined,
      "1/0",
      "YYYY-MM-DD",
      "YYYY-MM-DD HH:MM:SS[.fff]",
    ]);
  });

  it("should read back to the same schema", () => {
    const schema = schemaOf({ TableDefinition: columns("boolean", "DOUBLE", "TIMESTAMP") });
    const stored = completeSchema(schema, {
      columns: schema.TableDefinition!.Columns,
      deliveryType: "RAW",
      delimiter: "\t",
    });
    const reread = parseSchemaPart(serializeSchema(stored));
    expect(reread).toEqual({ ok: true, schema: stored });
  });
});

import { z } from "zod";
import { DATA_TYPES, STORED_AS, type DataTypeName } from "./value-types";
import { quoteForMessage } from "./quote";

/**
 * The DataSchema wire structure (docs/api.md): the JSON
 * that the upload's `Schema` part carries and the schema endpoint returns.
 * Unknown fields are refused rather than ignored, so a misspelt
 * `Nulable` is reported instead of silently meaning "nullable".
 */

/** The only SchemaVersion this service reads and writes. */
export const SCHEMA_VERSION = "1.0";
/** How the stored file is encoded: as uploaded, plain or gzip. */
export const DELIVERY_TYPES = ["RAW", "GZIP"] as const;
export type DeliveryType = (typeof DELIVERY_TYPES)[number];
/** Data formats accepted: CSV only in version 1. */
export const FORMAT_TYPES = ["CSV"] as const;

// Characters papaparse cannot use as a delimiter: it would silently fall back to ','.
const FORBIDDEN_DELIMITERS = new Set(['"', "\r", "\n", "\uFEFF"]);

/** Enumerations are matched case-insensitively and stored in upper case. */
function upperCaseEnum<const T extends readonly string[]>(values: T, what: string) {
  return z.string().transform((value, ctx): T[number] => {
    const upper = value.trim().toUpperCase();
    const match = values.find((candidate): candidate is T[number] => candidate === upper);
    if (match !== undefined) return match;
    ctx.issues.push({
      code: "custom",
      input: value,
      message: `unknown ${what} ${quoteForMessage(value)}; expected one of ${values.join(", ")}`,
    });
    return z.NEVER;
  });
}

// JSON writers often emit null for an absent field; treat it as absent.
function nullAsAbsent<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => (value === null ? undefined : value), schema);
}

// StoredAs is what the service writes (STORED_AS): a schema read back from the service is accepted as it is.
const DataTypeOptionsSchema = z.strictObject({
  Nullable: nullAsAbsent(z.boolean().default(true)),
  StoredAs: nullAsAbsent(z.string().optional()),
});

const DataTypeSchema = z
  .strictObject({
    DataType: upperCaseEnum(DATA_TYPES, "type"),
    DataTypeOptions: nullAsAbsent(DataTypeOptionsSchema.default({ Nullable: true })),
  })
  .superRefine(({ DataType, DataTypeOptions }, ctx) => {
    const given = DataTypeOptions.StoredAs;
    const stored = STORED_AS[DataType];
    if (given === undefined || given === stored) return;
    ctx.addIssue({
      code: "custom",
      path: ["DataTypeOptions", "StoredAs"],
      message:
        stored === undefined
          ? `${DataType} values are stored as written; StoredAs only reports how ${Object.keys(STORED_AS).join(", ")} are stored (leave it out)`
          : `${DataType} values are stored as ${quoteForMessage(stored)}; StoredAs only reports it and cannot change it (leave it out)`,
    });
  })
  // Derived from the type whenever the schema is written (serializeSchema), so not kept.
  .transform(({ DataType, DataTypeOptions }) => ({
    DataType,
    DataTypeOptions: { Nullable: DataTypeOptions.Nullable },
  }));

/** SQLite's default SQLITE_MAX_COLUMN: neither engine can make a wider table. */
export const MAX_COLUMNS = 2000;
/** The longest column name: longer ones are most likely a data row taken for the header. */
export const MAX_COLUMN_NAME_CHARS = 255;

const ColumnSchema = z.strictObject({
  Name: z
    .string()
    .refine((name) => name.trim() !== "", "a column name must not be empty")
    .refine(
      (name) => name.length <= MAX_COLUMN_NAME_CHARS,
      `a column name may be at most ${MAX_COLUMN_NAME_CHARS} characters long`,
    ),
  DataType: DataTypeSchema,
});

const TableDefinitionSchema = z.strictObject({
  Columns: z
    .array(ColumnSchema)
    .min(1, "a table needs at least one column")
    .max(MAX_COLUMNS, `a table has at most ${MAX_COLUMNS} columns`)
    .superRefine((columns, ctx) => {
      // SQL column names compare case-insensitively, so "id" and "ID" would collide in a query.
      const seen = new Map<string, number>();
      columns.forEach((column, index) => {
        const key = column.Name.toLowerCase();
        const first = seen.get(key);
        if (first === undefined) {
          seen.set(key, index);
          return;
        }
        ctx.addIssue({
          code: "custom",
          path: [index, "Name"],
          message: `duplicate column name ${quoteForMessage(column.Name)} (same as Columns[${first}]; names are compared ignoring letter case)`,
        });
      });
    }),
});

const DelimiterSchema = z.string().superRefine((delimiter, ctx) => {
  if (delimiter.length !== 1) {
    ctx.addIssue({
      code: "custom",
      message: `must be exactly one character, got ${quoteForMessage(delimiter)}`,
    });
  } else if (FORBIDDEN_DELIMITERS.has(delimiter)) {
    ctx.addIssue({
      code: "custom",
      message: "cannot be a double quote, a line break or a byte order mark",
    });
  }
});

// An absent Delimiter is detected from the file (csv-delimiter.ts); the stored schema always names one.
const DataOptionsSchema = z.strictObject({
  Header: nullAsAbsent(z.boolean().default(true)),
  Delimiter: nullAsAbsent(DelimiterSchema.optional()),
});

const DataSpecificationSchema = z.strictObject({
  FormatType: nullAsAbsent(upperCaseEnum(FORMAT_TYPES, "format").default("CSV")),
  DeliveryType: nullAsAbsent(upperCaseEnum(DELIVERY_TYPES, "delivery type").optional()),
  DataOptions: nullAsAbsent(DataOptionsSchema.default({ Header: true })),
});

const SchemaVersionSchema = z.string().refine((version) => version === SCHEMA_VERSION, {
  error: (issue) => `unsupported version ${quoteForMessage(String(issue.input))}; expected "${SCHEMA_VERSION}"`,
});

/** The zod schema of the `Schema` part after JSON parsing; defaults are filled in. */
export const DataSchemaSchema = z.strictObject({
  SchemaVersion: nullAsAbsent(SchemaVersionSchema.default(SCHEMA_VERSION)),
  TableDefinition: nullAsAbsent(TableDefinitionSchema.optional()),
  DataSpecification: nullAsAbsent(
    DataSpecificationSchema.default({ FormatType: "CSV", DataOptions: { Header: true } }),
  ),
});

export type DataSchema = z.output<typeof DataSchemaSchema>;
export type TableDefinition = z.output<typeof TableDefinitionSchema>;
export type Column = TableDefinition["Columns"][number];
export type DataOptions = DataSchema["DataSpecification"]["DataOptions"];

/** A schema as stored with a data item: table, delivery type and delimiter are always known. */
export interface StoredDataSchema {
  SchemaVersion: typeof SCHEMA_VERSION;
  TableDefinition: TableDefinition;
  DataSpecification: {
    FormatType: "CSV";
    DeliveryType: DeliveryType;
    DataOptions: Required<DataOptions>;
  };
}

export type SchemaPartResult = { ok: true; schema: DataSchema } | { ok: false; message: string };

/** Parses the upload's `Schema` part; a blank part means "no schema" and yields all defaults. */
export function parseSchemaPart(text: string): SchemaPartResult {
  if (text.trim() === "") return { ok: true, schema: DataSchemaSchema.parse({}) };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `Schema is not valid JSON: ${error instanceof Error ? error.message : error}` };
  }
  const parsed = DataSchemaSchema.safeParse(json, { error: describeIssue });
  if (parsed.success) return { ok: true, schema: parsed.data };
  return { ok: false, message: formatIssues(parsed.error.issues) };
}

// Several problems are listed at once so a user can fix them in one round; a few are enough.
const MAX_REPORTED_ISSUES = 5;

function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  const listed = issues.slice(0, MAX_REPORTED_ISSUES).map((issue) => `${issuePath(issue.path)}: ${issue.message}`);
  const more = issues.length - listed.length;
  return listed.join("; ") + (more > 0 ? `; and ${more} more` : "");
}

function issuePath(path: readonly PropertyKey[]): string {
  let text = "Schema";
  for (const key of path) text += typeof key === "number" ? `[${key}]` : `.${String(key)}`;
  return text;
}

function describeIssue(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return "is required";
      return `expected ${expectedDescription(issue.expected)}, got ${jsonTypeOf(issue.input)}`;
    case "unrecognized_keys":
      return unknownFieldsMessage(issue.keys, issue.inst);
    default:
      return undefined;
  }
}

function expectedDescription(expected: string): string {
  switch (expected) {
    case "boolean":
      return "true or false";
    case "object":
      return "an object";
    case "array":
      return "an array";
    default:
      return `a ${expected}`;
  }
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return `the string ${quoteForMessage(value)}`;
    case "number":
    case "boolean":
      return `${typeof value} ${String(value)}`;
    case "object":
      return "an object";
    default:
      return typeof value;
  }
}

function unknownFieldsMessage(keys: readonly string[], schema: unknown): string {
  const known = schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
  const names = keys.map((key) => {
    const sameLetters = known.find((candidate) => candidate.toLowerCase() === key.toLowerCase());
    return sameLetters
      ? `${quoteForMessage(key)} (did you mean ${quoteForMessage(sameLetters)}?)`
      : quoteForMessage(key);
  });
  const allowed = known.length > 0 ? `; allowed: ${known.join(", ")}` : "";
  return `unknown field${keys.length === 1 ? "" : "s"} ${names.join(", ")}${allowed}`;
}

export type ForceGenerateResult = { ok: true; value: boolean } | { ok: false; message: string };

/** Parses the `ForceGenerateTableDefinition` part: `true` or `false`, any letter case, surrounding spaces ignored. */
export function parseForceGenerate(value: string): ForceGenerateResult {
  const normalized = value.trim().toLowerCase();
  if (normalized === "true") return { ok: true, value: true };
  if (normalized === "false") return { ok: true, value: false };
  return {
    ok: false,
    message: `ForceGenerateTableDefinition must be true or false, got ${quoteForMessage(value)}`,
  };
}

/** The TableDefinition an upload must be checked against, or undefined when it is to be generated. */
export function tableDefinitionToCheck(schema: DataSchema, forceGenerate: boolean): TableDefinition | undefined {
  return forceGenerate ? undefined : schema.TableDefinition;
}

/** Completes a parsed schema with the table, delivery type and delimiter that the ingest found. */
export function completeSchema(
  schema: DataSchema,
  found: { columns: TableDefinition["Columns"]; deliveryType: DeliveryType; delimiter: string },
): StoredDataSchema {
  return {
    SchemaVersion: SCHEMA_VERSION,
    TableDefinition: { Columns: found.columns },
    DataSpecification: {
      FormatType: "CSV",
      DeliveryType: found.deliveryType,
      DataOptions: { Header: schema.DataSpecification.DataOptions.Header, Delimiter: found.delimiter },
    },
  };
}

/** The canonical stored JSON of a schema: fixed key order, every option written out. */
export function serializeSchema(schema: StoredDataSchema): string {
  const { DataOptions } = schema.DataSpecification;
  return JSON.stringify({
    SchemaVersion: schema.SchemaVersion,
    TableDefinition: {
      Columns: schema.TableDefinition.Columns.map((column) => ({
        Name: column.Name,
        DataType: {
          DataType: column.DataType.DataType,
          DataTypeOptions: dataTypeOptions(column),
        },
      })),
    },
    DataSpecification: {
      FormatType: schema.DataSpecification.FormatType,
      DeliveryType: schema.DataSpecification.DeliveryType,
      DataOptions: { Header: DataOptions.Header, Delimiter: DataOptions.Delimiter },
    },
  });
}

// The stored form is said wherever it differs from the file's (TIMESTAMP `2024-03-01T18:07+01` is stored `2024-03-01 17:07:00`).
function dataTypeOptions(column: Column): { Nullable: boolean; StoredAs?: string } {
  const storedAs = STORED_AS[column.DataType.DataType];
  const nullable = column.DataType.DataTypeOptions.Nullable;
  return storedAs === undefined ? { Nullable: nullable } : { Nullable: nullable, StoredAs: storedAs };
}

/** A generated column: the given name and type, nullable. */
export function generatedColumn(name: string, type: DataTypeName): Column {
  return { Name: name, DataType: { DataType: type, DataTypeOptions: { Nullable: true } } };
}

import Papa from "papaparse";

/** The column types a DataSchema may declare (docs/api.md). */
export const DATA_TYPES = ["STRING", "INTEGER", "DOUBLE", "BOOLEAN", "DATE", "TIMESTAMP"] as const;
export type DataType = (typeof DATA_TYPES)[number];

export interface DeclaredColumn {
  name: string;
  type: DataType;
  nullable: boolean;
}

const SAMPLE_BYTES = 64 * 1024;

/** The first line of a CSV file (gzipped or not), read from its first bytes only. */
async function firstLine(file: File): Promise<string> {
  const head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  const gzipped = head[0] === 0x1f && head[1] === 0x8b;
  const bytes: ReadableStream<BufferSource> = file.slice(0, SAMPLE_BYTES).stream();
  const plain: ReadableStream<BufferSource> = gzipped ? bytes.pipeThrough(new DecompressionStream("gzip")) : bytes;
  const reader = plain.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  try {
    while (!/[\r\n]/.test(text) && text.length < SAMPLE_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      text += value;
    }
  } catch {
    // A gzip member cut at SAMPLE_BYTES ends in an error; what came before it is enough.
  } finally {
    void reader.cancel().catch(() => {});
  }
  return text.replace(/^\uFEFF/, "").split(/\r?\n|\r/)[0] ?? "";
}

/** The header row's names, as columns to declare (STRING and nullable until the person says otherwise). */
export async function headerColumns(file: File): Promise<DeclaredColumn[]> {
  const line = await firstLine(file);
  const names = Papa.parse<string[]>(line, { header: false }).data[0] ?? [];
  return names.map((name) => ({ name, type: "STRING", nullable: true }));
}

/** The item name a file proposes: its own name, with what an item name may not hold as `_`. */
export function itemNameOf(fileName: string): string {
  return fileName
    .replace(/[^A-Za-z0-9_.-]/g, "_")
    .replace(/^\./, "_")
    .slice(0, 128);
}

/** Whether two lists of columns have the same names in the same order (a file and the item it replaces). */
export function sameColumnNames(a: DeclaredColumn[], b: DeclaredColumn[]): boolean {
  return a.length === b.length && a.every((column, i) => column.name === b[i]!.name);
}

/** The stored schema's columns (for a replacement that keeps them). */
export function storedColumns(schema: string): DeclaredColumn[] {
  const parsed = JSON.parse(schema) as {
    TableDefinition?: {
      Columns: { Name: string; DataType: { DataType: string; DataTypeOptions?: { Nullable?: boolean } } }[];
    };
  };
  return (parsed.TableDefinition?.Columns ?? []).map((column) => ({
    name: column.Name,
    type: (DATA_TYPES as readonly string[]).includes(column.DataType.DataType)
      ? (column.DataType.DataType as DataType)
      : "STRING",
    nullable: column.DataType.DataTypeOptions?.Nullable ?? true,
  }));
}

/** The Schema part for declared columns (DataSchema JSON, PascalCase). */
export function schemaJson(columns: DeclaredColumn[]): string {
  return JSON.stringify({
    SchemaVersion: "1.0",
    TableDefinition: {
      Columns: columns.map((column) => ({
        Name: column.name,
        DataType: { DataType: column.type, DataTypeOptions: { Nullable: column.nullable } },
      })),
    },
  });
}

/** One problem the service found in a refused file: where it is and what is wrong. */
export interface Problem {
  row: string | null;
  column: string | null;
  problem: string;
}

/**
 * Splits the service's refusal ("The file does not match the TableDefinition:
 * row 3, column 'amount': 'x' is not a valid DOUBLE …; row 5 has 2 fields, …")
 * into its problems, so the console can show them as a table; a message of
 * another shape is one problem.
 */
export function refusalProblems(message: string): { intro: string; problems: Problem[] } {
  const colon = message.indexOf(": ");
  const intro = colon >= 0 ? message.slice(0, colon) : message;
  const rest = colon >= 0 ? message.slice(colon + 2) : "";
  const parts = rest.split(/; (?=row \d|the header row)/).filter(Boolean);
  if (!/^(row \d|the header row)/.test(rest)) return { intro: message, problems: [] };
  return {
    intro,
    problems: parts.map((part) => {
      const cell = /^row (\d+), column ('(?:[^'\\]|\\.)*'): (.*)$/s.exec(part);
      if (cell) return { row: cell[1]!, column: cell[2]!.slice(1, -1), problem: cell[3]!.replace(/\.$/, "") };
      const row = /^row (\d+):? (.*)$/s.exec(part);
      if (row) return { row: row[1]!, column: null, problem: row[2]!.replace(/\.$/, "") };
      return { row: null, column: null, problem: part.replace(/\.$/, "") };
    }),
  };
}

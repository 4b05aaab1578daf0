import { generatedColumn, SCHEMA_VERSION, serializeSchema } from "../ingest/data-schema";
import type { ResultColumn } from "./query-record";

/** The DataSchema string of a query result: CSV with a header, comma-separated, not compressed (docs/api.md). */
export function resultSchemaString(columns: ResultColumn[]): string {
  return serializeSchema({
    SchemaVersion: SCHEMA_VERSION,
    TableDefinition: { Columns: columns.map((column) => generatedColumn(column.name, column.type)) },
    DataSpecification: { FormatType: "CSV", DeliveryType: "RAW", DataOptions: { Header: true, Delimiter: "," } },
  });
}

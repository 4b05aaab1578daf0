import type { DataTypeName } from "../../ingest/value-types";

/** A result value in JSON: a number where JSON holds it exactly, else the CSV's text; NULL is null. */
export type JsonValue = string | number | null;

/** A result value for a typed file (Parquet, Arrow): INTEGER as a 64-bit bigint, DOUBLE as a number. */
export type NativeValue = string | number | bigint | null;

/*
 * Both read a field of the result CSV by its column's type (writer.ts types a
 * column INTEGER or DOUBLE only when every value was one). The CSV writes
 * NULL as an empty field, and so does it an empty string: both read as null.
 */

/** INTEGER beyond ±(2^53 − 1) and a DOUBLE that is not finite stay strings, as JSON numbers cannot hold them. */
export function jsonValue(text: string, type: DataTypeName): JsonValue {
  if (text === "") return null;
  switch (type) {
    case "INTEGER": {
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : text;
    }
    case "DOUBLE": {
      const n = Number(text);
      return Number.isFinite(n) ? n : text;
    }
    default:
      return text;
  }
}

export function nativeValue(text: string, type: DataTypeName): NativeValue {
  if (text === "") return null;
  switch (type) {
    case "INTEGER":
      return BigInt(text);
    case "DOUBLE":
      return Number(text);
    default:
      return text;
  }
}

import type { DataTypeName } from "../../ingest/value-types";

/** A result value in JSON: a number or boolean where JSON holds it exactly, else the CSV's text; NULL is null. */
export type JsonValue = string | number | boolean | null;

/** A result value for a typed file (Parquet, Arrow): INTEGER a 64-bit bigint, DATE days since 1970-01-01. */
export type NativeValue = string | number | bigint | boolean | null;

/*
 * Both read a field of the result CSV by its column's type (writer.ts types a
 * column INTEGER or DOUBLE only when every value was one, and BOOLEAN, DATE or
 * TIMESTAMP only when every value is in that type's stored form: 1/0, ISO
 * text). The CSV writes NULL as an empty field and the empty string as `""`,
 * which the reader gives as null and "" (stored-csv.ts); an empty string only
 * ever comes in a STRING column, whose values are not converted.
 */

/** INTEGER beyond ±(2^53 − 1) and a DOUBLE that is not finite stay strings, as JSON numbers cannot hold them. */
export function jsonValue(text: string | null, type: DataTypeName): JsonValue {
  if (text === null) return null;
  switch (type) {
    case "INTEGER": {
      const n = Number(text);
      return Number.isSafeInteger(n) ? n : text;
    }
    case "DOUBLE": {
      const n = Number(text);
      return Number.isFinite(n) ? n : text;
    }
    case "BOOLEAN":
      return text === "1";
    default:
      return text;
  }
}

/** jsonValue's JSON text, without JSON.stringify's cost for a number, a boolean or null (their String is their JSON). */
export function jsonText(text: string | null, type: DataTypeName): string {
  const value = jsonValue(text, type);
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

export function nativeValue(text: string | null, type: DataTypeName): NativeValue {
  if (text === null) return null;
  switch (type) {
    case "INTEGER":
      return BigInt(text);
    case "DOUBLE":
      return Number(text);
    case "BOOLEAN":
      return text === "1";
    case "DATE":
      return epochDay(text);
    default:
      return text;
  }
}

const DAY_MS = 86_400_000;

/** Days from 1970-01-01 to a `YYYY-MM-DD` date (proleptic Gregorian; setUTCFullYear keeps years below 100 as written). */
function epochDay(text: string): number {
  const date = new Date(0);
  date.setUTCFullYear(Number(text.slice(0, 4)), Number(text.slice(5, 7)) - 1, Number(text.slice(8, 10)));
  return Math.round(date.getTime() / DAY_MS);
}

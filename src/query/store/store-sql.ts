import { StorageClass } from "../result/csv";
import { asciiLowerCase, isIdentifier, significantTokens, tokenize } from "../sql/tokenizer";
import { quoteIdentifier } from "../table-layout";

/**
 * The query with each internal table name (`t0`, …) replaced by the store
 * table that holds it. The internal names are ones the query did not use
 * itself (table-names.ts), so every identifier token with such a name is one.
 */
export function renameTables(sql: string, tables: ReadonlyMap<string, string>): string {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) throw new Error(tokenized.message);
  let out = "";
  let at = 0;
  for (const token of tokenized.tokens) {
    if (!isIdentifier(token)) continue;
    const table = tables.get(asciiLowerCase(token.value));
    if (table === undefined) continue;
    out += sql.slice(at, token.start) + quoteIdentifier(table);
    at = token.end;
  }
  return out + sql.slice(at);
}

/**
 * The query wrapped so that each result value comes back as SQLite's
 * `quote()` of it: one evaluation per value, and text that tells INTEGER
 * from REAL and keeps 64-bit integers whole, which a Durable Object's
 * numbers cannot. The common table expression takes the query's column
 * count (known from the sql.js check) and only a SELECT or VALUES can stand
 * inside it; the query's own ORDER BY decides the order of the rows.
 */
export function quotedResultSql(sql: string, columnCount: number): string {
  const names = Array.from({ length: columnCount }, (_, i) => `"c${i}"`);
  // Up to the last token of the statement: a trailing `;` or comment would not fit inside the parentheses.
  const tokenized = tokenize(sql);
  if (!tokenized.ok) throw new Error(tokenized.message);
  const last = significantTokens(tokenized.tokens)
    .filter((token) => token.kind !== "semicolon")
    .at(-1);
  const body = sql.slice(0, last?.end ?? 0);
  return `WITH "__dqs_result"(${names.join(",")}) AS (\n${body}\n)\nSELECT ${names.map((n) => `quote(${n})`).join(",")} FROM "__dqs_result"`;
}

/** One value of a quoted result (see quotedResultSql) as the result writer takes it. */
export function unquote(text: string): [unknown, StorageClass] {
  const first = text.charCodeAt(0);
  if (first === 39 /* ' */) {
    const inner = text.slice(1, -1);
    return [inner.includes("''") ? inner.replace(/''/g, "'") : inner, StorageClass.Text];
  }
  if (text === "NULL") return [null, StorageClass.Null];
  if ((first === 88 || first === 120) /* X */ && text.charCodeAt(1) === 39)
    return [fromHex(text.slice(2, -1)), StorageClass.Blob];
  // quote() writes a REAL with a decimal point or an exponent, exactly enough digits to read back the same double.
  if (/[.eEnN]/.test(text)) return [Number(text), StorageClass.Float];
  return [text, StorageClass.Integer];
}

function fromHex(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

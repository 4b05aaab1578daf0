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

/** A Durable Object's SQLite allows at most this many columns in a table or in any SELECT's result. */
export const STORE_MAX_COLUMNS = 100;

/**
 * The query wrapped so that each result value comes back as SQLite's
 * `quote()` of it, which tells INTEGER from REAL and keeps 64-bit integers
 * whole (a Durable Object's numbers cannot), or, for text holding a NUL
 * (where `quote()` stops), as `~` and the text: one column per result
 * column. The common table expression takes the query's column count
 * (known from the sql.js check), and only a SELECT or VALUES can stand
 * inside it. The two `LIMIT -1` keep SQLite from flattening the query into
 * the wrapper, which would evaluate each result expression once per
 * reference (`random()` would differ between the two); the query's own
 * ORDER BY still decides the order of the rows.
 */
export function quotedResultSql(sql: string, columnCount: number): string {
  const names = Array.from({ length: columnCount }, (_, i) => `"c${i}"`);
  const body = statementBody(sql);
  const values = names.map(
    (n) => `CASE WHEN typeof(${n}) = 'text' AND instr(${n}, char(0)) > 0 THEN '~' || ${n} ELSE quote(${n}) END`,
  );
  return `WITH "__dqs_result"(${names.join(",")}) AS (SELECT * FROM (\n${body}\n) LIMIT -1)\nSELECT ${values.join(", ")} FROM "__dqs_result" LIMIT -1`;
}

/** Reads one row of quotedResultSql's result into `values` and `classes`. */
export function unquoteRow(row: readonly unknown[], values: unknown[], classes: StorageClass[]): void {
  for (let i = 0; i < values.length; i++) [values[i], classes[i]] = unquote(row[i] as string);
}

/** The statement up to its last token: without a trailing `;` or comment, it fits inside parentheses or after AS. */
export function statementBody(sql: string): string {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) throw new Error(tokenized.message);
  const last = significantTokens(tokenized.tokens)
    .filter((token) => token.kind !== "semicolon")
    .at(-1);
  return sql.slice(0, last?.end ?? 0);
}

/** True when `sql` holds more than one statement (a `;` followed by more than trivia). */
export function hasMoreThanOneStatement(sql: string): boolean {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) return true;
  const tokens = significantTokens(tokenized.tokens);
  const firstSemicolon = tokens.findIndex((token) => token.kind === "semicolon");
  return firstSemicolon !== -1 && tokens.slice(firstSemicolon).some((token) => token.kind !== "semicolon");
}

/** One value of a quoted result (see quotedResultSql). */
function unquote(text: string): [unknown, StorageClass] {
  const first = text.charCodeAt(0);
  if (first === 39 /* ' */) {
    const inner = text.slice(1, -1);
    return [inner.includes("''") ? inner.replace(/''/g, "'") : inner, StorageClass.Text];
  }
  if (first === 126 /* ~ */) return [text.slice(1), StorageClass.Text];
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

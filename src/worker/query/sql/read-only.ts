import type { Database } from "../sqlite";
import { asciiUpperCase, isKeyword, isOperator, significantTokens, tokenize, type Token } from "./tokenizer";

export type ReadOnlyCheck = { ok: true } | { ok: false; message: string };

const ONLY_READ_ONLY = "Only read-only queries (SELECT, WITH … SELECT, VALUES) are allowed";
// SQLite's statements other than SELECT, VALUES and WITH, by their first word.
const OTHER_STATEMENTS = [
  "ALTER",
  "ANALYZE",
  "ATTACH",
  "BEGIN",
  "COMMIT",
  "CREATE",
  "DELETE",
  "DETACH",
  "DROP",
  "END",
  "INSERT",
  "PRAGMA",
  "REINDEX",
  "RELEASE",
  "REPLACE",
  "ROLLBACK",
  "SAVEPOINT",
  "UPDATE",
  "VACUUM",
];
// Words that, after CREATE, DROP or ALTER, say what is created, dropped or altered.
const OBJECT_WORDS = ["TEMP", "TEMPORARY", "UNIQUE", "VIRTUAL", "TABLE", "VIEW", "INDEX", "TRIGGER"];

/**
 * Accepts exactly one read-only statement: SELECT, WITH … SELECT or VALUES
 * (docs/api.md), and from here on the connection refuses every write.
 *
 * Three layers, each resting on SQLite rather than on keyword lists alone:
 * - `PRAGMA query_only = 1` is set first: whatever slips through, SQLite
 *   itself refuses to change the database ("attempt to write a readonly
 *   database"). The connection stays read-only, so call this after the
 *   tables are loaded and right before running the query.
 * - Statements are counted by SQLite's own parser (`iterateStatements`
 *   prepares one statement after another), so a statement hidden behind a
 *   comment or a string is found, while a trailing `;`, comment or
 *   whitespace is not a statement. Preparing needs the tables to exist, and
 *   syntax errors and unknown names come back with SQLite's own message.
 * - The kind comes from the first significant token; for WITH, from the
 *   statement that follows the common table expressions, because SQLite
 *   prepares `WITH x AS (…) DELETE …` too.
 *
 * EXPLAIN is refused as well: its rows describe SQLite's program or plan
 * over internal table names, not data, and docs/api.md names three forms.
 */
export function checkReadOnly(db: Database, sql: string): ReadOnlyCheck {
  db.run("PRAGMA query_only = 1");
  let statements = 0;
  try {
    // The iterator finalises each statement when it moves on, and itself on an error.
    for (const _statement of db.iterateStatements(sql)) statements++;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (statements > 0) return { ok: false, message: `Only one statement is allowed; found at least 2 (${message})` };
    // A write SQLite could not prepare (`WITH x AS (…) DELETE FROM x`: "no such table") is named as a write.
    return isOtherStatement(sql) ? checkKind(sql) : { ok: false, message };
  }
  if (statements === 0) return { ok: false, message: "The query holds no SQL statement" };
  if (statements > 1) return { ok: false, message: `Only one statement is allowed; found ${statements}` };
  // After SQLite has parsed the text, so that syntax errors carry SQLite's own message.
  return checkKind(sql);
}

/** Whether the text starts as a statement other than a query would (INSERT, WITH … DELETE, PRAGMA, …). */
function isOtherStatement(sql: string): boolean {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) return false;
  const tokens = significantTokens(tokenized.tokens);
  const main = isKeyword(tokens[0], "WITH") ? statementAfterWith(tokens) : tokens[0];
  return isKeyword(main, ...OTHER_STATEMENTS);
}

/** The statement's kind, from its first significant token (for WITH, the statement the WITH leads to). */
function checkKind(sql: string): ReadOnlyCheck {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) return { ok: false, message: tokenized.message };
  const tokens = significantTokens(tokenized.tokens).filter((token) => token.kind !== "semicolon");
  const first = tokens[0];
  if (isKeyword(first, "SELECT", "VALUES")) return { ok: true };
  if (isKeyword(first, "WITH")) {
    const main = statementAfterWith(tokens);
    if (isKeyword(main, "SELECT", "VALUES")) return { ok: true };
    const what = main ? `a WITH … ${describe(tokens, tokens.indexOf(main))}` : "a WITH that does not lead to a SELECT";
    return { ok: false, message: `${ONLY_READ_ONLY}; this is ${what}` };
  }
  if (first?.kind === "identifier" && first.quote === "none") {
    return { ok: false, message: `${ONLY_READ_ONLY}; this is ${withArticle(describe(tokens, 0))}` };
  }
  return { ok: false, message: `${ONLY_READ_ONLY}; this statement starts with ${first?.text ?? "nothing"}` };
}

/** The statement keyword and, for CREATE, DROP and ALTER, what they act on: "CREATE TEMP TABLE". */
function describe(tokens: readonly Token[], at: number): string {
  const words = [asciiUpperCase(tokens[at]!.text)];
  if (isKeyword(tokens[at], "CREATE", "DROP", "ALTER")) {
    for (let k = at + 1; isKeyword(tokens[k], ...OBJECT_WORDS); k++) words.push(asciiUpperCase(tokens[k]!.text));
  }
  return words.join(" ");
}

function withArticle(words: string): string {
  return `${/^[AEIOU]/.test(words) ? "an" : "a"} ${words}`;
}

/**
 * The first token of the statement a WITH clause leads to:
 * `WITH [RECURSIVE] name [(columns)] AS [[NOT] MATERIALIZED] (…) [, …] <statement>`.
 * Undefined when the tokens do not have that shape.
 */
function statementAfterWith(tokens: readonly Token[]): Token | undefined {
  let k = isKeyword(tokens[1], "RECURSIVE") ? 2 : 1;
  for (;;) {
    k++; // the table name
    if (isOperator(tokens[k], "(")) k = afterParentheses(tokens, k);
    if (!isKeyword(tokens[k], "AS")) return undefined;
    k++;
    if (isKeyword(tokens[k], "NOT")) k++;
    if (isKeyword(tokens[k], "MATERIALIZED")) k++;
    if (!isOperator(tokens[k], "(")) return undefined;
    k = afterParentheses(tokens, k);
    if (!isOperator(tokens[k], ",")) return tokens[k];
    k++;
  }
}

/** The index just past the `)` matching the `(` at `open`. */
function afterParentheses(tokens: readonly Token[], open: number): number {
  let depth = 0;
  for (let k = open; k < tokens.length; k++) {
    if (isOperator(tokens[k], "(")) depth++;
    else if (isOperator(tokens[k], ")") && --depth === 0) return k + 1;
  }
  return tokens.length;
}

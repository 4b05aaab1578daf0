import type { BoundValue } from "../sql/parameters";
import { isIdentifier, isKeyword, isOperator, significantTokens, tokenize, type Token } from "../sql/tokenizer";
import { STORE_MAX_COMPOUND_TERMS } from "./compound-terms";

/**
 * Where a Durable Object's SQLite allows less than sql.js (measured in the
 * workers test pool: test/query/store/store-limits.test.ts). Compound
 * SELECTs are nested to fit (compound-terms.ts); bound values are held to
 * 100 in both engines (sql/parameters.ts); result width, value length,
 * LIKE patterns and statement length are answered in table-store.ts.
 */
export const STORE_MAX_EXPRESSION_DEPTH = 100;
export const STORE_MAX_FUNCTION_ARGUMENTS = 127;
/** printf() and format() in a store pad or cut to at most this many characters (SQLITE_PRINTF_PRECISION_LIMIT), without error. */
export const STORE_MAX_PRINTF_WIDTH = 100_000;
/** Terms of one ORDER BY or GROUP BY, and columns of any SELECT, subqueries included (SQLITE_MAX_COLUMN). */
export const STORE_MAX_TERMS = 100;

/** Functions sql.js has that a store's SQLite refuses ("not authorized") and that have another name there. */
const INSTEAD: Record<string, string> = {
  ceiling: "ceil",
  power: "pow",
  log10: "log",
  if: "iif(condition, value, otherwise)",
};

/** What to tell the user for a store's SQLite message that is one of its lower limits, or null for any other. */
export function storeLimitMessage(message: string): string | null {
  if (/^Expression tree is too large/i.test(message))
    return `an expression in a table store may nest at most ${STORE_MAX_EXPRESSION_DEPTH} levels deep (a Durable Object's limit; sql.js allows 1000), and each term of a chain such as a OR b OR … is a level. Use x IN (…) for a list of values, or split the expression`;
  const args = /^too many arguments on function (.+)$/i.exec(message);
  if (args)
    return `a function in a table store takes at most ${STORE_MAX_FUNCTION_ARGUMENTS} arguments (a Durable Object's limit; sql.js allows 1000), and this call of ${args[1]} has more. Split it, e.g. max(max(…), max(…))`;
  const clause = /^too many terms in (ORDER BY|GROUP BY) clause$/i.exec(message);
  if (clause)
    return `${/^o/i.test(clause[1]!) ? "an" : "a"} ${clause[1]!.toUpperCase()} in a table store may have at most ${STORE_MAX_TERMS} terms (a Durable Object's limit). Use fewer`;
  if (/^too many columns (in result set|on )/i.test(message))
    return `a SELECT in a table store, a subquery's included, may have at most ${STORE_MAX_TERMS} columns (a Durable Object's limit). Select fewer columns`;
  if (/^too many terms in compound SELECT$/i.test(message))
    return `a compound SELECT in a table store may have at most ${STORE_MAX_COMPOUND_TERMS} terms (UNION, UNION ALL, INTERSECT, EXCEPT: a Durable Object's limit), and the store could not split this one. Nest it yourself: SELECT * FROM (its first terms) UNION …`;
  // Only where there is something else to write; the others read clearly as SQLite says them.
  const refused = /^not authorized to use function: (.+)$/i.exec(message)?.[1];
  const instead = refused && INSTEAD[refused.toLowerCase()];
  if (refused && instead)
    return `a table store's SQLite does not offer the function ${refused} (sql.js does); use ${instead} instead`;
  return null;
}

/**
 * Why a store could answer `sql` differently from sql.js, or null: a
 * printf() or format() whose width or precision may pass the store's
 * STORE_MAX_PRINTF_WIDTH, where the store silently writes fewer characters.
 * Only a format known before the query runs (written in the SQL, or a bound
 * value) with every width and precision written as a number up to the limit
 * is sure to read alike.
 */
export function printfBeyondStore(sql: string, values: readonly BoundValue[]): string | null {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) return null;
  const tokens = significantTokens(tokenized.tokens);
  for (const [i, token] of tokens.entries()) {
    if (!isIdentifier(token) || !/^(printf|format)$/i.test(token.value) || !isOperator(tokens[i + 1], "(")) continue;
    if (isKeyword(tokens[closing(tokens, i + 1) + 1], "AS")) continue; // a common table expression so named
    const format = tokens[i + 2];
    const after = tokens[i + 3];
    const known =
      !isOperator(after, ",") && !isOperator(after, ")")
        ? null
        : format?.kind === "string"
          ? format.value
          : format?.kind === "parameter" && /^\?\d+$/.test(format.text)
            ? values[Number(format.text.slice(1)) - 1]
            : null;
    if (typeof known === "string" && widthsBelowLimit(known)) continue;
    return `Failed: ${token.value}() in a table store writes at most ${STORE_MAX_PRINTF_WIDTH} characters for a width or precision (a Durable Object's limit) and silently cuts longer ones, so the store runs it only when its format is written in the query (or bound) with every width and precision a number up to that ('%10d', '%.2f'; not '%*d'). Write the format so.`;
  }
  return null;
}

/** True when every conversion in a printf format has its width and precision written as numbers up to the limit. */
function widthsBelowLimit(format: string): boolean {
  for (const spec of format.matchAll(/%%|%[-+ #0,!]*(\*|\d*)(?:\.(\*|\d*))?/g))
    for (const size of [spec[1], spec[2]])
      if (size === "*" || (size !== undefined && size !== "" && Number(size) > STORE_MAX_PRINTF_WIDTH)) return false;
  return true;
}

/** The index of the `)` closing the `(` at `open` (or past the end). */
function closing(tokens: readonly Token[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (isOperator(tokens[i], "(")) depth++;
    else if (isOperator(tokens[i], ")") && --depth === 0) return i;
  }
  return tokens.length;
}

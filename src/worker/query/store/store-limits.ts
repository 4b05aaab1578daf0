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

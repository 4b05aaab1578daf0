import { significantTokens, type Token } from "./tokenizer";

/**
 * SQLite's own tables and table-valued functions that describe a database
 * rather than data: the schema tables, statistics, page access and every
 * pragma function, and a Durable Object's internal tables (`_cf_…`). A
 * query reads only the data items it names (docs/api.md), so any of these
 * names is refused, in both engines, before anything runs.
 */
const INTERNAL =
  /^(sqlite_(master|schema|temp_master|temp_schema|sequence|stat\d|dbpage|dbdata|dbptr)|dbstat|pragma_\w+|_cf_\w*)$/i;

/** The first internal name the query uses, or null. */
export function internalTableName(tokens: readonly Token[]): string | null {
  for (const token of significantTokens(tokens)) {
    if (token.kind === "identifier" && INTERNAL.test(token.value)) return token.value;
  }
  return null;
}

import { rewriteTableNames } from "../sql/table-names";

/** What a data name may end in that says nothing about a query's result. */
const FILE_ENDING = /(\.(csv|tsv|txt))?(\.gz)?$/i;

/**
 * The file name a downloaded result is offered under: after the one data item
 * the query reads (`seattle-weather-query-2025-06-01-143205.csv`), else
 * `query-2025-06-01-143205.csv`, with the time the query was submitted (UTC),
 * so a folder of downloads says what each file is and sorts by when.
 */
export function resultFilename(query: { sql: string; createdAt: string }, extension: string): string {
  const stamp = query.createdAt.slice(0, 19).replace("T", "-").replace(/:/g, "");
  const names = rewriteTableNames(query.sql);
  const items = names.ok ? names.tables : [];
  const item = items.length === 1 ? items[0]!.data.replace(FILE_ENDING, "") : "";
  return `${item ? `${item}-` : ""}query-${stamp}.${extension}`;
}

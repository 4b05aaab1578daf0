import { navigate } from "./route";

/**
 * What the SQL page shows when it opens: the text being written and the last
 * query, kept while the person visits other pages; "Query" buttons elsewhere
 * put SQL here (and ask for it to run) before opening the page.
 */
export const editorState = {
  sql: "",
  queryId: null as string | null,
  runOnOpen: false,
};

/** Opens the SQL page with this text; with `run`, runs it at once. */
export function openInEditor(sql: string, run = false): void {
  editorState.sql = sql;
  editorState.queryId = null;
  editorState.runOnOpen = run;
  navigate({ view: "sql" });
}

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
  /** The account whose kept text has been read into `sql` in this page's life. */
  restoredFor: null as string | null,
};

/** Where the editor's text outlives a reload: this browser's storage, one entry per account. */
const storageKey = (account: string) => `dqs:editor-text:${account}`;

/**
 * Puts the account's kept text in the editor, once per page load, unless a
 * "Query" button has put SQL there already.
 */
export function restoreEditorText(account: string): void {
  if (editorState.restoredFor === account) return;
  editorState.restoredFor = account;
  if (editorState.sql) return;
  try {
    editorState.sql = localStorage.getItem(storageKey(account)) ?? "";
  } catch {
    // Storage refused (a private window's policy): the text lives as long as the page.
  }
}

/** The editor's text as it is now, kept for the next load of the console. */
export function keepEditorText(account: string, text: string): void {
  editorState.sql = text;
  try {
    localStorage.setItem(storageKey(account), text);
  } catch {
    // Full or refused storage: the text lives as long as the page.
  }
}

/** Opens the SQL page with this text; with `run`, runs it at once. */
export function openInEditor(sql: string, run = false): void {
  editorState.sql = sql;
  editorState.queryId = null;
  editorState.runOnOpen = run;
  navigate({ view: "sql" });
}

import type { SQLNamespace } from "@codemirror/lang-sql";
import { useEffect, useRef, useState } from "preact/hooks";
import type { QueryStatus } from "../api";
import { completionSchema } from "../catalog-names";
import { editorState, keepEditorText, restoreEditorText } from "../editor-store";
import { countOf, formatBytes, formatCount, queryTiming } from "../format";
import { cancelQuery, FINISHED, followQuery, queryStatus, sortedSql, submitQueryId } from "../query-runner";
import { loadResult, type ResultData } from "../results";
import { useSession } from "./App";
import { sqlName } from "../sql-names";
import type { Sort } from "./Grid";
import { ResultView } from "./ResultView";
import { messageOf, Notice, PageTitle, Spinner, useLazy } from "./ui";

// A placeholder, not text of the query: a first click and typing start an empty query.
const HINT = "SELECT … FROM account.dataset.item — Ctrl+Enter (Cmd+Enter) runs the query";

export function SqlPage() {
  const { account, catalog } = useSession();
  const [schema, setSchema] = useState<SQLNamespace>({});
  const [status, setStatus] = useState<QueryStatus | null>(null);
  const [result, setResult] = useState<ResultData | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loadingRows, setLoadingRows] = useState(false);
  const run = useRef<AbortController | null>(null);
  const [submitting, setSubmitting] = useState(false);
  // The query being started, once the submit has answered; Cancel clicked before that cancels it then.
  const started = useRef<{ queryId: string | null; cancel: boolean }>({ queryId: null, cancel: false });
  const [cancelling, setCancelling] = useState(false);
  /** The query the editor ran and its rows, in its own order: what a sort of the whole result starts from. */
  const base = useRef<{ status: QueryStatus; result: ResultData } | null>(null);
  const [sorting, setSorting] = useState<Sort | null>(null);
  const editor = useLazy(() => import("./Editor"));
  const running = submitting || (status !== null && !FINISHED.has(status.Status));
  restoreEditorText(account);

  useEffect(() => {
    if (catalog) void completionSchema(catalog).then(setSchema);
  }, [catalog]);

  /** Shows a query: follows it while it runs, then reads its rows. */
  async function show(first: QueryStatus, signal: AbortSignal) {
    const last = await followQuery(first, setStatus, signal);
    if (signal.aborted || last.Status !== "succeeded") return;
    setLoadingRows(true);
    try {
      const loaded = await loadResult(last, signal);
      base.current = { status: last, result: loaded };
      setResult(loaded);
    } finally {
      setLoadingRows(false);
    }
  }

  /**
   * Sorts the whole result, not only the rows the grid holds: the query runs
   * again inside one that orders it (its downloads are then sorted too);
   * no sort shows the first query's rows again.
   */
  async function sortAll(sort: Sort | null) {
    const origin = base.current;
    if (!origin || running) return;
    if (sort === null) {
      setStatus(origin.status);
      setResult(origin.result);
      return;
    }
    run.current?.abort();
    const controller = new AbortController();
    run.current = controller;
    const before = status;
    setError(null);
    setSorting(sort);
    try {
      const queryId = await submitQueryId(sortedSql(origin.status.Sql, sort), origin.status.Parameters);
      const last = await followQuery(await queryStatus(queryId), setStatus, controller.signal);
      if (controller.signal.aborted) return;
      if (last.Status !== "succeeded") {
        setStatus(before);
        if (last.Status === "failed")
          setError(`Sorting all ${formatCount(origin.result.total)} rows failed: ${last.Message}`);
        return;
      }
      const loaded = await loadResult(last, controller.signal);
      // SQLite renames a repeated column name in the subquery; the grid keeps the names the query gave.
      const columns = loaded.columns.length === origin.result.columns.length ? origin.result.columns : loaded.columns;
      setResult({ ...loaded, columns, sortedBy: sort });
    } catch (caught) {
      if (!controller.signal.aborted) {
        setStatus(before);
        setError(`Sorting all ${formatCount(origin.result.total)} rows failed: ${messageOf(caught)}`);
      }
    } finally {
      setSorting(null);
    }
  }

  async function execute() {
    const text = editorState.sql.trim();
    if (!text || running) return;
    run.current?.abort();
    const controller = new AbortController();
    run.current = controller;
    setError(null);
    setResult(null);
    setStatus(null);
    base.current = null;
    started.current = { queryId: null, cancel: false };
    setCancelling(false);
    setSubmitting(true);
    try {
      const queryId = await submitQueryId(editorState.sql);
      editorState.queryId = queryId;
      started.current.queryId = queryId;
      if (started.current.cancel) await cancelQuery(queryId).catch((caught) => setError(messageOf(caught)));
      const first = await queryStatus(queryId).finally(() => setSubmitting(false));
      await show(first, controller.signal);
    } catch (caught) {
      setSubmitting(false);
      if (!controller.signal.aborted) setError(messageOf(caught));
    }
  }

  async function cancel() {
    setCancelling(true);
    const queryId = status?.QueryId ?? started.current.queryId;
    if (!queryId) {
      started.current.cancel = true;
      return;
    }
    try {
      await cancelQuery(queryId);
    } catch (caught) {
      setCancelling(false);
      setError(messageOf(caught));
    }
  }

  // Coming back to the page shows the last query; a "Re-run" elsewhere runs its SQL at once.
  useEffect(() => {
    const controller = new AbortController();
    run.current = controller;
    // SQL a "Query" button put here is the text to keep from now on.
    keepEditorText(account, editorState.sql);
    if (editorState.runOnOpen) {
      editorState.runOnOpen = false;
      void execute();
    } else if (editorState.queryId) {
      queryStatus(editorState.queryId)
        .then((first) => show(first, controller.signal))
        .catch((caught) => setError(messageOf(caught)));
    }
    return () => run.current?.abort();
  }, []);

  return (
    <>
      <PageTitle>SQL</PageTitle>
      <p class="muted">
        SQLite's dialect, one read-only statement. Name a data item as <code>account.dataset.item</code> (quote a part
        with a dot or a dash in backticks: <code>{sqlName(account, "sales", "orders.csv")}</code>); the editor completes
        names, and columns after a dot. Your queries run as <strong>{account}</strong>.
      </p>
      {editor ? (
        <editor.SqlEditor
          initial={editorState.sql}
          hint={HINT}
          schema={schema}
          onChange={(text) => keepEditorText(account, text)}
          onRun={() => void execute()}
        />
      ) : (
        <Spinner label="Loading the editor…" />
      )}
      <div class="toolbar">
        <button type="button" onClick={() => void execute()} disabled={running}>
          Run <kbd>Ctrl</kbd>+<kbd>Enter</kbd>
        </button>
        {running && (
          <button type="button" class="secondary" onClick={() => void cancel()} disabled={cancelling}>
            Cancel
          </button>
        )}
        {submitting ? (
          <Spinner label={cancelling ? "Cancelling…" : "Submitting…"} />
        ) : (
          <QueryState status={status} loadingRows={loadingRows} />
        )}
      </div>
      {error && <Notice kind="error">{error}</Notice>}
      {status?.Status === "failed" && <Notice kind="error">{status.Message}</Notice>}
      {result && (
        <ResultView
          queryId={status?.QueryId ?? null}
          result={result}
          sortAll={(sort) => void sortAll(sort)}
          sorting={sorting}
        />
      )}
    </>
  );
}

/** The query's state as it changes: queued, running (and what it is doing), done with figures, or why not. */
function QueryState(props: { status: QueryStatus | null; loadingRows: boolean }) {
  const { status } = props;
  let text = "";
  if (status) {
    switch (status.Status) {
      case "queued":
      case "running": {
        // The service's messages mostly say the state already ("Running: executing the query.").
        const state = status.Status === "queued" ? "Queued" : "Running";
        text = status.Message.startsWith(state) ? status.Message : `${state}: ${status.Message}`;
        break;
      }
      case "succeeded":
        text = `${status.Reused ? "Succeeded · reused the result of an identical earlier query on the same data" : `Succeeded in ${queryTiming(status)}`} · ${countOf(status.RowCount ?? 0, "row")} · ${formatBytes(status.Size)}`;
        break;
      case "failed":
        text = "Failed";
        break;
      case "cancelled":
        text = status.Message ? `Cancelled: ${status.Message}` : "Cancelled";
        break;
    }
  }
  return (
    <span class={`query-state ${status?.Status ?? ""}`} role="status" aria-live="polite">
      {status && !FINISHED.has(status.Status) ? <Spinner label={text} /> : text}
      {props.loadingRows && <Spinner label="Reading the rows…" />}
    </span>
  );
}

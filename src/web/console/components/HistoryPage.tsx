import { useEffect, useState } from "preact/hooks";
import { api, ok, type QueryStatus } from "../api";
import { editorState, openInEditor } from "../editor-store";
import { countOf, formatBytes, formatCount, formatTime, queryTiming } from "../format";
import { navigate } from "../route";
import { FINISHED } from "../query-runner";
import { Empty, messageOf, Notice, PageTitle, Spinner } from "./ui";

/** The caller's past queries, newest first: state, duration and size; open, re-run or see the result. */
export function HistoryPage() {
  const [queries, setQueries] = useState<QueryStatus[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function load(from: string | null) {
    try {
      const body = await ok(api.GET("/me/queries", { params: { query: { limit: 25, cursor: from ?? undefined } } }));
      setQueries((before) => [...(from ? (before ?? []) : []), ...body.Data.QueryList]);
      setCursor(body.Data.NextCursor);
    } catch (caught) {
      setError(messageOf(caught));
    }
  }
  useEffect(() => void load(null), []);

  const showResult = (query: QueryStatus) => {
    editorState.sql = query.Sql;
    editorState.queryId = query.QueryId;
    editorState.runOnOpen = false;
    navigate({ view: "sql" });
  };

  return (
    <>
      <PageTitle>History</PageTitle>
      {error && <Notice kind="error">{error}</Notice>}
      {queries === null && !error && <Spinner label="Loading your queries…" />}
      {queries?.length === 0 && (
        <Empty title="No queries yet — write one in the SQL page.">
          Every query you run is listed here with its state, how long it took and the size of its result.
        </Empty>
      )}
      {queries && queries.length > 0 && (
        <ul class="history">
          {queries.map((query) => (
            <li key={query.QueryId} class="card">
              <pre class="sql">{query.Sql}</pre>
              <div class="history-meta">
                <span class={`badge ${query.Status}`}>{query.Status}</span>
                <span>{formatTime(query.CreatedAt)}</span>
                {FINISHED.has(query.Status) && (
                  <span
                    class="timing"
                    title={query.Reused ? "The result of an identical earlier query, on the same data" : undefined}
                  >
                    {queryTiming(query)}
                  </span>
                )}
                {query.Status === "succeeded" && (
                  <span>
                    {countOf(query.RowCount ?? 0, "row")} · {formatBytes(query.Size)}
                  </span>
                )}
                {query.Status === "failed" && <span class="failure">{query.Message}</span>}
              </div>
              <div class="row">
                <button type="button" class="small secondary" onClick={() => openInEditor(query.Sql)}>
                  Open in editor
                </button>
                <button type="button" class="small secondary" onClick={() => openInEditor(query.Sql, true)}>
                  Re-run
                </button>
                {query.Status === "succeeded" && query.ExpiresAt !== null && (
                  <button type="button" class="small secondary" onClick={() => showResult(query)}>
                    See result
                  </button>
                )}
              </div>
            </li>
          ))}
        </ul>
      )}
      {cursor && (
        <button type="button" class="secondary" onClick={() => void load(cursor)}>
          Load older queries
        </button>
      )}
    </>
  );
}

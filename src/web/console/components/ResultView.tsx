import { useEffect, useMemo, useState } from "preact/hooks";
import { apiCapabilities } from "../api";
import { formatCount } from "../format";
import { toCsv, type ResultData } from "../results";
import { Grid, sortOrder, type Sort } from "./Grid";
import { Notice, Spinner, useLazy } from "./ui";

/** The formats as their projects write their names. */
const FORMAT_NAMES: Record<string, string> = { csv: "CSV", ndjson: "NDJSON", parquet: "Parquet", arrow: "Arrow" };

/**
 * A result: the grid or a chart, downloads in every format the API offers,
 * and a copy as CSV. The grid sorts the rows it holds; a result larger than
 * that is sorted whole by `sortAll` (the service), or the grid says its sort
 * covers the loaded rows only.
 */
export function ResultView(props: {
  queryId: string | null;
  result: ResultData;
  compact?: boolean;
  /** Sorts the whole result (null: back to the query's own order); the rows then arrive sorted. */
  sortAll?: (sort: Sort | null) => void;
  /** The sort of the whole result under way. */
  sorting?: Sort | null;
}) {
  const { result } = props;
  const [localSort, setLocalSort] = useState<Sort | null>(null);
  const [tab, setTab] = useState<"table" | "chart">("table");
  const [formats, setFormats] = useState<string[]>(["csv"]);
  const [copied, setCopied] = useState<string | null>(null);
  const partial = result.rows.length < result.total;
  // Sorting the loaded rows of a partial result would show a wrong order as if it were the result's.
  const sortsWhole = partial && props.sortAll !== undefined;
  const sort = sortsWhole ? (props.sorting ?? result.sortedBy ?? null) : localSort;
  const order = useMemo(
    () => (sortsWhole ? result.rows.map((_, i) => i) : sortOrder(result.rows, localSort)),
    [result, localSort, sortsWhole],
  );
  const chart = useLazy(() => import("./Chart"), tab === "chart");

  useEffect(() => {
    void apiCapabilities().then((capabilities) => setFormats(capabilities.formats));
  }, []);

  async function copy() {
    try {
      await navigator.clipboard.writeText(toCsv(result, order));
      setCopied(`Copied ${formatCount(order.length)} rows as CSV.`);
    } catch {
      setCopied("The browser did not allow copying; download the CSV instead.");
    }
  }

  const download = (format: string) =>
    `/v1/query/${encodeURIComponent(props.queryId ?? "")}/results/rawdata${format === "csv" ? "" : `?format=${format}`}`;

  return (
    <div class="result">
      <div class="result-bar">
        {!props.compact && (
          <div class="toggle" role="group" aria-label="Show the result as">
            <button type="button" aria-pressed={tab === "table"} onClick={() => setTab("table")}>
              Table
            </button>
            <button type="button" aria-pressed={tab === "chart"} onClick={() => setTab("chart")}>
              Chart
            </button>
          </div>
        )}
        <span class="muted" role="status">
          {props.sorting ? (
            <Spinner
              label={`Sorting all ${formatCount(result.total)} rows by ${result.columns[props.sorting.column]?.name}…`}
            />
          ) : (
            rowsText(result, sortsWhole)
          )}
        </span>
        {!props.compact && props.queryId && (
          <div class="downloads">
            {formats.map((format) => (
              <a key={format} class="button small secondary" href={download(format)} download>
                Download {FORMAT_NAMES[format] ?? format}
              </a>
            ))}
            <button type="button" class="small secondary" onClick={() => void copy()}>
              Copy as CSV
            </button>
          </div>
        )}
      </div>
      {copied && <Notice kind="info">{copied}</Notice>}
      {partial && !sortsWhole && localSort && (
        <Notice kind="info">
          Sorted: the first {formatCount(result.rows.length)} rows only, not all {formatCount(result.total)}; the
          result's own order is kept in the download.
        </Notice>
      )}
      {result.columns.length === 0 ? (
        <p class="muted">The query returned no columns.</p>
      ) : tab === "table" ? (
        <Grid
          result={result}
          order={order}
          sort={sort}
          onSort={sortsWhole ? (next) => props.sortAll?.(next) : setLocalSort}
          disabled={Boolean(props.sorting)}
        />
      ) : chart ? (
        <chart.QuickChart result={result} order={order} />
      ) : (
        <Spinner label="Loading the chart…" />
      )}
    </div>
  );
}

/** How many rows the grid holds, of how many, and in which order. */
function rowsText(result: ResultData, sortsWhole: boolean): string {
  const all = `${formatCount(result.total)} ${result.total === 1 ? "row" : "rows"}`;
  if (result.rows.length >= result.total) return all;
  const shown = `showing the first ${formatCount(result.rows.length)}`;
  const by = result.sortedBy && result.columns[result.sortedBy.column]?.name;
  if (by)
    return `All ${all} sorted by ${by} (${result.sortedBy!.descending ? "descending" : "ascending"}); ${shown}. The downloads are sorted too.`;
  if (sortsWhole) return `${all}; ${shown}. A column's header sorts all of them; a download has every row.`;
  return `Showing the first ${formatCount(result.rows.length)} of ${all}; download the result for all of them.`;
}

import { useEffect, useMemo, useState } from "preact/hooks";
import { apiCapabilities } from "../api";
import { formatCount } from "../format";
import { toCsv, type ResultData } from "../results";
import { Grid, sortOrder, type Sort } from "./Grid";
import { Notice, Spinner, useLazy } from "./ui";

/** The formats as their projects write their names. */
const FORMAT_NAMES: Record<string, string> = { csv: "CSV", ndjson: "NDJSON", parquet: "Parquet", arrow: "Arrow" };

/** A result: the grid or a chart, downloads in every format the API offers, and a copy as CSV. */
export function ResultView(props: { queryId: string | null; result: ResultData; compact?: boolean }) {
  const { result } = props;
  const [sort, setSort] = useState<Sort | null>(null);
  const [tab, setTab] = useState<"table" | "chart">("table");
  const [formats, setFormats] = useState<string[]>(["csv"]);
  const [copied, setCopied] = useState<string | null>(null);
  const order = useMemo(() => sortOrder(result.rows, sort), [result, sort]);
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
          {result.rows.length < result.total
            ? `Showing the first ${formatCount(result.rows.length)} of ${formatCount(result.total)} rows; download the result for all of them.`
            : `${formatCount(result.total)} ${result.total === 1 ? "row" : "rows"}`}
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
      {result.columns.length === 0 ? (
        <p class="muted">The query returned no columns.</p>
      ) : tab === "table" ? (
        <Grid result={result} order={order} sort={sort} onSort={setSort} />
      ) : chart ? (
        <chart.QuickChart result={result} order={order} />
      ) : (
        <Spinner label="Loading the chart…" />
      )}
    </div>
  );
}

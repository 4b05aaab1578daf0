import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from "chart.js";
import { useEffect, useRef, useState } from "preact/hooks";
import type { ResultData, Value } from "../results";

Chart.register(
  BarController,
  LineController,
  BarElement,
  LineElement,
  PointElement,
  CategoryScale,
  LinearScale,
  Tooltip,
);

/** A chart shows at most this many points; more would be unreadable (and slow). */
const MAX_POINTS = 2000;
const NUMERIC = new Set(["INTEGER", "DOUBLE", "REAL", "NUMERIC", "BOOLEAN"]);

function label(value: Value): string {
  return value === null ? "NULL" : String(value);
}

/** A quick bar or line chart of one column against another, in the rows' current order. */
export function QuickChart(props: { result: ResultData; order: number[] }) {
  const { result, order } = props;
  const numeric = result.columns.map((column, i) => ({ ...column, i })).filter((c) => NUMERIC.has(c.type));
  const [x, setX] = useState(0);
  const [y, setY] = useState(numeric.find((c) => c.i !== 0)?.i ?? numeric[0]?.i ?? -1);
  const [kind, setKind] = useState<"bar" | "line">("bar");
  const canvas = useRef<HTMLCanvasElement>(null);

  const points = order.slice(0, MAX_POINTS).map((i) => result.rows[i]!);
  const yName = result.columns[y]?.name ?? "";
  const xName = result.columns[x]?.name ?? "";

  useEffect(() => {
    if (!canvas.current || y < 0) return;
    const chart = new Chart(canvas.current, {
      type: kind,
      data: {
        labels: points.map((row) => label(row[x]!)),
        datasets: [
          {
            label: yName,
            data: points.map((row) => {
              const value = row[y]!;
              return value === null ? null : Number(value);
            }),
            backgroundColor: "#3b6ee8",
            borderColor: "#1f4fd1",
            borderWidth: kind === "line" ? 2 : 0,
            pointRadius: points.length > 200 ? 0 : 3,
          },
        ],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: {
          x: { title: { display: true, text: xName } },
          y: { title: { display: true, text: yName }, beginAtZero: kind === "bar" },
        },
        plugins: { tooltip: { enabled: true } },
      },
    });
    return () => chart.destroy();
  }, [result, order, x, y, kind]);

  if (numeric.length === 0)
    return <p class="muted">A chart needs a numeric column (INTEGER or DOUBLE); this result has none.</p>;

  return (
    <div class="chart">
      <div class="inline-form">
        <label>
          X axis
          <select name="chart-x" value={x} onChange={(event) => setX(Number(event.currentTarget.value))}>
            {result.columns.map((column, i) => (
              <option key={i} value={i}>
                {column.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Y axis
          <select name="chart-y" value={y} onChange={(event) => setY(Number(event.currentTarget.value))}>
            {numeric.map((column) => (
              <option key={column.i} value={column.i}>
                {column.name}
              </option>
            ))}
          </select>
        </label>
        <fieldset class="segmented">
          <legend class="visually-hidden">Chart kind</legend>
          {(["bar", "line"] as const).map((k) => (
            <label key={k}>
              <input type="radio" name="chart-kind" value={k} checked={kind === k} onChange={() => setKind(k)} />
              {k === "bar" ? "Bar" : "Line"}
            </label>
          ))}
        </fieldset>
      </div>
      <div class="chart-canvas">
        <canvas
          ref={canvas}
          role="img"
          aria-label={`${kind === "bar" ? "Bar" : "Line"} chart of ${yName} by ${xName}, ${points.length} points`}
        />
      </div>
      {order.length > MAX_POINTS && (
        <p class="muted">
          The chart shows the first {MAX_POINTS.toLocaleString("en-US")} of {order.length.toLocaleString("en-US")} rows,
          in the grid's order.
        </p>
      )}
    </div>
  );
}

import {
  elementScroll,
  observeElementOffset,
  observeElementRect,
  Virtualizer,
  type VirtualizerOptions,
} from "@tanstack/virtual-core";
import { useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState } from "preact/hooks";
import { valueText, type ResultColumn, type ResultData, type Value } from "../results";

const ROW_HEIGHT = 30;
const HEAD_HEIGHT = 34;
/** The grid grows with its rows up to this height, then scrolls. */
const MAX_HEIGHT = 420;

export interface Sort {
  column: number;
  descending: boolean;
}

/** Compares two values of one column: NULLs last, numbers as numbers, text as people sort it. */
function compare(a: Value, b: Value): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if ((typeof a === "bigint" || typeof a === "number") && (typeof b === "bigint" || typeof b === "number"))
    return a < b ? -1 : 1;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

/** The row order for a sort: indexes into `rows`, stable, NULLs last in both directions. */
export function sortOrder(rows: Value[][], sort: Sort | null): number[] {
  const order = rows.map((_, i) => i);
  if (!sort) return order;
  const { column, descending } = sort;
  return order.sort((i, j) => {
    const a = rows[i]![column]!;
    const b = rows[j]![column]!;
    if (a === null || b === null) return compare(a, b);
    return descending ? compare(b, a) : compare(a, b);
  });
}

/** tanstack's framework-free virtualizer, driven the way its React adapter drives it. */
function useVirtualizer(count: number, scroller: { current: HTMLDivElement | null }) {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const options: VirtualizerOptions<HTMLDivElement, Element> = {
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
    observeElementRect,
    observeElementOffset,
    scrollToFn: elementScroll,
    onChange: () => rerender(0),
  };
  const [virtualizer] = useState(() => new Virtualizer(options));
  virtualizer.setOptions(options);
  useEffect(() => virtualizer._didMount(), []);
  useLayoutEffect(() => virtualizer._willUpdate());
  return virtualizer;
}

/** Column widths from the names, types and the first rows' values, within bounds. */
function columnWidths(columns: ResultColumn[], rows: Value[][]): string {
  const sample = rows.slice(0, 200);
  const widths = columns.map((column, c) => {
    const longest = sample.reduce((most, row) => Math.max(most, valueText(row[c]!, column.type).length), 0);
    // The header holds the name, the type (smaller) and the sort mark.
    const header = column.name.length * 8.5 + column.type.length * 6.5 + 44;
    return `${Math.round(Math.min(360, Math.max(72, header, longest * 8 + 24)))}px`;
  });
  return `4.5rem ${widths.join(" ")}`;
}

/** A cell: NULL, numbers and booleans each look like what they are, never like text. */
function Cell(props: { value: Value; type: string }) {
  const { value } = props;
  if (value === null) return <span class="null">NULL</span>;
  const kind =
    typeof value === "number" || typeof value === "bigint" ? "num" : typeof value === "boolean" ? "bool" : "";
  const text = valueText(value, props.type);
  return (
    <span class={kind} title={text.length > 40 ? text : undefined}>
      {text}
    </span>
  );
}

/**
 * The result grid: only the rows in view are in the page (100,000 rows scroll
 * as smoothly as 10), sorted by any column, NULLs and types shown as such.
 * Arrow keys and Page Up/Down scroll it once focused.
 */
export function Grid(props: {
  result: ResultData;
  order: number[];
  sort: Sort | null;
  onSort: (sort: Sort | null) => void;
  /** While a sort is under way elsewhere (the service's), the headers wait. */
  disabled?: boolean;
}) {
  const { result, order, sort } = props;
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer(order.length, scroller);
  const template = useMemo(() => columnWidths(result.columns, result.rows), [result]);

  const nextSort = (column: number): Sort | null =>
    sort?.column !== column ? { column, descending: false } : !sort.descending ? { column, descending: true } : null;

  return (
    <div
      class="grid"
      ref={scroller}
      role="grid"
      aria-label="Query results"
      aria-rowcount={order.length + 1}
      aria-colcount={result.columns.length + 1}
      tabIndex={0}
      style={{ height: `${Math.min(MAX_HEIGHT, HEAD_HEIGHT + order.length * ROW_HEIGHT + 18)}px` }}
    >
      <div class="grid-row grid-head" role="row" aria-rowindex={1} style={{ gridTemplateColumns: template }}>
        <span class="grid-cell rownum" role="columnheader">
          #
        </span>
        {result.columns.map((column, c) => (
          <span
            key={c}
            class="grid-cell"
            role="columnheader"
            aria-sort={sort?.column === c ? (sort.descending ? "descending" : "ascending") : "none"}
          >
            <button type="button" class="sort" disabled={props.disabled} onClick={() => props.onSort(nextSort(c))}>
              <span class="col-name">{column.name}</span>
              <span class="col-type">{column.type}</span>
              <span class="sort-mark" aria-hidden="true">
                {sort?.column === c ? (sort.descending ? "▼" : "▲") : ""}
              </span>
            </button>
          </span>
        ))}
      </div>
      <div class="grid-body" style={{ height: `${virtualizer.getTotalSize()}px` }}>
        {virtualizer.getVirtualItems().map((item) => {
          const row = result.rows[order[item.index]!]!;
          return (
            <div
              key={item.key}
              class="grid-row"
              role="row"
              aria-rowindex={item.index + 2}
              style={{ gridTemplateColumns: template, transform: `translateY(${item.start}px)` }}
            >
              <span class="grid-cell rownum" role="gridcell">
                {item.index + 1}
              </span>
              {row.map((value, c) => (
                <span key={c} class="grid-cell" role="gridcell">
                  <Cell value={value} type={result.columns[c]!.type} />
                </span>
              ))}
            </div>
          );
        })}
      </div>
    </div>
  );
}

import type { Database } from "sql.js";
import { databaseFileName, type SqliteInstance } from "../sqlite";
import { createImageView, type AttachedColumn, type ColumnImages } from "./column-images";
import { quoteIdentifier } from "../table-layout";
import type { TableToLoad } from "./load-table";
import { Stop, transient } from "../run-limits";
import type { RunControl, RunGuard } from "./run-guard";

/**
 * The images a table attaches: those of the columns it uses (`wanted`), or,
 * when it uses none, the smallest, which supplies the rows.
 */
export function imagesToFetch(
  table: Pick<TableToLoad, "layout" | "columns">,
  recorded: ColumnImages,
): { wanted: number[]; fetch: number[] } {
  const wanted = table.layout.columns.flatMap((column, index) =>
    !table.columns || table.columns.has(column.name.toLowerCase()) ? [index] : [],
  );
  const smallest = recorded.columns.reduce(
    (best, c, index) => (c.bytes < recorded.columns[best]!.bytes ? index : best),
    0,
  );
  return { wanted, fetch: wanted.length > 0 ? wanted : [smallest] };
}

/** The column images one query attached: each its own sql.js database, read through a view per table. */
export class AttachedImages {
  private readonly images: { view: string; schema: string; db: Database; bytes: number }[] = [];

  constructor(
    private readonly instance: SqliteInstance,
    private readonly guard: RunGuard,
    private readonly openImage: (key: string) => Promise<Uint8Array | null>,
    private readonly control: RunControl,
  ) {}

  /**
   * Replaces the (empty) table `table.name` by a view over the column images
   * of the columns it needs, each fetched whole and attached. Their sizes are
   * known beforehand, so a query that cannot fit fails before fetching.
   */
  async attach(target: Database, table: TableToLoad, recorded: ColumnImages, dataName: string): Promise<void> {
    const { guard } = this;
    const all = table.layout.columns;
    const { wanted, fetch } = imagesToFetch(table, recorded);
    const fetchBytes = fetch.reduce((sum, index) => sum + recorded.columns[index]!.bytes, 0);
    if (guard.stats.bytesLoaded + fetchBytes > guard.limits.maxLoadBytes) throw guard.overLoadLimit();
    guard.expectRoom(target, fetchBytes);
    target.run(`DROP TABLE ${quoteIdentifier(table.name)}`);
    const attached: AttachedColumn[] = [];
    for (const index of fetch) {
      const bytes = await transient("reading a column image", () => this.openImage(recorded.columns[index]!.key));
      if (!bytes) throw new Stop(`Failed: the data of ${dataName} was replaced or deleted while the query ran.`);
      if (guard.timeIsUp()) throw guard.overTimeLimit(" while loading");
      // sql.js copies the image into its in-memory file system; the fetched bytes are let go.
      const image = new this.instance.sql.Database(bytes);
      const schema = `${table.name}_c${index}`;
      this.images.push({ view: table.name, schema, db: image, bytes: bytes.byteLength });
      guard.imageBytes += bytes.byteLength;
      guard.stats.bytesLoaded += bytes.byteLength;
      target.run(`ATTACH '${databaseFileName(image)}' AS ${quoteIdentifier(schema)}`);
      if (wanted.length > 0) attached.push({ name: all[index]!.name, type: all[index]!.type, schema });
      guard.measure(target);
    }
    createImageView(target, table.name, attached, `${table.name}_c${fetch[0]}`, recorded.rows);
  }

  /**
   * Copies each view of column images into a real table (INSERT … SELECT
   * inside SQLite, no value crosses into JavaScript, rows in file order) and
   * lets its images go, when a view would not do: SQLite's plan builds an
   * automatic index over it (a self-join, say: it would materialize the view
   * anyway, after picking a worse join order than for a table), or the query
   * names `rowid`, which a view lacks. Only if the copies fit the memory
   * budget; if not, the query runs on the views (slower, or failing with
   * SQLite's message about rowid).
   */
  async tablesInsteadOfViews(target: Database, sql: string, namesRowid: boolean): Promise<void> {
    const { guard } = this;
    const views = [...new Set(this.images.map((image) => image.view))];
    if (views.length === 0) return;
    if (!namesRowid && !automaticIndexOnView(target, sql, views)) return;
    if (!guard.hasRoom(target, 2 * guard.imageBytes)) return;
    await this.control.progress("Running: copying the column images into tables, for a better join plan.");
    for (const view of views) {
      const name = quoteIdentifier(view);
      const copy = quoteIdentifier(`${view}_table`);
      guard.stopOnSqliteError(() => target.run(`CREATE TABLE main.${copy} AS SELECT * FROM temp.${name}`));
      guard.measure(target); // the peak: the copy and the images it came from
      target.run(`DROP VIEW temp.${name}`);
      target.run(`ALTER TABLE main.${copy} RENAME TO ${name}`);
      for (const image of this.images.filter((image) => image.view === view)) {
        target.run(`DETACH ${quoteIdentifier(image.schema)}`);
        image.db.close();
        guard.imageBytes -= image.bytes;
      }
      guard.measure(target);
    }
    this.images.splice(0, this.images.length);
  }

  /** Closes every image still attached. */
  close(): void {
    for (const image of this.images) image.db.close();
  }
}

/**
 * True when SQLite's plan for `sql` builds an automatic index over one of
 * `views` (or an alias of one): anything automatically indexed that is not
 * a subquery the plan itself materializes.
 */
function automaticIndexOnView(db: Database, sql: string, views: string[]): boolean {
  let plan: string[];
  try {
    plan = db.exec(`EXPLAIN QUERY PLAN ${sql}`)[0]?.values.map((row) => String(row[3])) ?? [];
  } catch {
    return false; // SQLite's own error is reported when the statement is prepared for real.
  }
  const subqueries = new Set(
    plan
      .flatMap((line) => /^(?:CO-ROUTINE|MATERIALIZE) (\S+)/.exec(line)?.[1] ?? [])
      .filter((name) => !views.includes(name)),
  );
  const indexed = plan.flatMap((line) => /^SEARCH (\S+) USING AUTOMATIC/.exec(line)?.[1] ?? []);
  return indexed.some((name) => !subqueries.has(name));
}

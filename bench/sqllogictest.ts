/**
 * SQLite's sqllogictest corpus through dqs: each test file's tables are built
 * in a local SQLite (node:sqlite), uploaded as data items with an explicit
 * schema, and every `query` record is run through the HTTP API and compared
 * with the corpus's answer, formatted and sorted as sqllogictest does.
 *
 *   node bench/sqllogictest.ts --corpus <dir-or-git> [--store] [--files select1,select2,evidence]
 *
 * Writes bench/results/sqllogictest-<mode>.json and bench/results/sqllogictest.md
 * (both modes, whichever JSON files exist). Not part of `npm test`: the
 * corpus is not in the repository. bench/README.md ("sqllogictest") says how.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { loginTokens } from "./dqs.ts";
import { killAllStarted, ROOT, startWranglerDev } from "./server.ts";

const ACCOUNT = "slt";
const RESULTS = join(ROOT, "bench/results");
/** Disagreements kept per mode in the JSON (the Markdown shows the first 30). */
const KEPT_DISAGREEMENTS = 2000;

// ---------------------------------------------------------------------------------------------------------------
// The corpus: files and records

/** Reads test files from a work tree (`<dir>/test/…`) or a git directory (`git show HEAD:test/…`). */
class Corpus {
  private readonly isTree: boolean;
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
    this.isTree = existsSync(join(dir, "test")) && statSync(join(dir, "test")).isDirectory();
  }

  /** `select1` → test/select1.test; `evidence` → every test/evidence/*.test; `evidence/in1` → that file. */
  expand(names: string[]): string[] {
    const out: string[] = [];
    for (const name of names) {
      if (name === "evidence")
        out.push(...this.list("test/evidence").map((path) => path.replace(/^test\/|\.test$/g, "")));
      else out.push(name.replace(/^test\/|\.test$/g, ""));
    }
    return out;
  }

  read(name: string): string {
    const path = `test/${name}.test`;
    if (this.isTree) return readFileSync(join(this.dir, path), "utf8");
    return execFileSync("git", ["-C", this.dir, "show", `HEAD:${path}`], { encoding: "utf8", maxBuffer: 1 << 30 });
  }

  private list(folder: string): string[] {
    if (this.isTree)
      return readdirSync(join(this.dir, folder))
        .filter((file) => file.endsWith(".test"))
        .sort()
        .map((file) => `${folder}/${file}`);
    return execFileSync("git", ["-C", this.dir, "ls-tree", "--name-only", "HEAD", `${folder}/`], { encoding: "utf8" })
      .split("\n")
      .filter((path) => path.endsWith(".test"))
      .sort();
  }
}

type Expected = { kind: "hash"; count: number; md5: string } | { kind: "values"; values: string[] };

type SltRecord =
  | { kind: "statement"; line: number; skip: boolean; expectError: boolean; sql: string }
  | {
      kind: "query";
      line: number;
      skip: boolean;
      types: string;
      sort: "nosort" | "rowsort" | "valuesort";
      label: string | null;
      sql: string;
      expected: Expected;
    }
  | { kind: "halt"; line: number; skip: boolean };

/**
 * Parses a test file: records are separated by blank lines; `#` starts a comment line; `skipif DB` and
 * `onlyif DB` lines before a record decide whether it applies to SQLite.
 */
export function parseTestFile(text: string): SltRecord[] {
  const lines = text.split(/\r?\n/);
  const records: SltRecord[] = [];
  let i = 0;
  while (i < lines.length) {
    const raw = lines[i]!;
    if (raw.trim() === "" || raw.startsWith("#")) {
      i++;
      continue;
    }
    let skip = false;
    const start = i + 1;
    while (i < lines.length) {
      const words = lines[i]!.replace(/#.*$/, "").trim().split(/\s+/);
      if (words[0] === "skipif") skip ||= words[1] === "sqlite";
      else if (words[0] === "onlyif") skip ||= words[1] !== "sqlite";
      else break;
      i++;
    }
    const head = (lines[i] ?? "").replace(/#.*$/, "").trim().split(/\s+/);
    i++;
    const body: string[] = [];
    const readSql = () => {
      while (i < lines.length && lines[i]!.trim() !== "" && lines[i] !== "----") body.push(lines[i++]!);
    };
    switch (head[0]) {
      case "statement":
        readSql();
        records.push({ kind: "statement", line: start, skip, expectError: head[1] === "error", sql: body.join("\n") });
        break;
      case "query": {
        readSql();
        const values: string[] = [];
        if (lines[i] === "----") {
          i++;
          while (i < lines.length && lines[i]!.trim() !== "") values.push(lines[i++]!);
        }
        const hashed = values.length === 1 ? /^(\d+) values hashing to ([0-9a-f]{32})$/.exec(values[0]!) : null;
        records.push({
          kind: "query",
          line: start,
          skip,
          types: head[1] ?? "",
          sort: (head[2] as "nosort" | "rowsort" | "valuesort" | undefined) ?? "nosort",
          label: head[3] ?? null,
          sql: body.join("\n"),
          expected: hashed ? { kind: "hash", count: Number(hashed[1]), md5: hashed[2]! } : { kind: "values", values },
        });
        break;
      }
      case "halt":
        records.push({ kind: "halt", line: start, skip });
        break;
      default:
        // hash-threshold and anything unknown: nothing to run. Skip to the record's end.
        while (i < lines.length && lines[i]!.trim() !== "") i++;
    }
  }
  return records;
}

// ---------------------------------------------------------------------------------------------------------------
// Values and sqllogictest's formatting

/** A value as SQLite holds it: INTEGER as bigint, REAL as number, TEXT as string, BLOB as bytes. */
type Value = null | bigint | number | string | Uint8Array;

/** SQLite's text of a REAL as the corpus was made (`%!.15g`: 15 significant digits, always a decimal point). */
export function realText(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Inf" : "-Inf";
  if (x === 0) return "0.0";
  const [mantissa = "", exponentText = "0"] = x.toExponential(14).split("e");
  const exponent = Number(exponentText);
  const trim = (digits: string) => {
    const stripped = digits.includes(".") ? digits.replace(/0+$/, "") : digits;
    return stripped.endsWith(".") ? `${stripped}0` : stripped.includes(".") ? stripped : `${stripped}.0`;
  };
  if (exponent < -4 || exponent >= 15)
    return `${trim(mantissa)}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  return trim(x.toFixed(14 - exponent));
}

/** `sqlite3_column_int64`: a REAL truncated (clamped to 64 bits), TEXT by its leading integer, else 0. */
function toInt64(value: Exclude<Value, null>): bigint {
  if (typeof value === "bigint") return value;
  if (typeof value === "number") {
    if (Number.isNaN(value)) return 0n;
    if (value >= 9223372036854775807) return 9223372036854775807n;
    if (value <= -9223372036854775808) return -9223372036854775808n;
    return BigInt(Math.trunc(value));
  }
  const text = typeof value === "string" ? value : Buffer.from(value).toString("latin1");
  const match = /^\s*([+-]?)0*(\d*)/.exec(text)!;
  const digits = match[2] ?? "";
  if (digits === "") return 0n;
  const n = BigInt(`${match[1]}${digits}`);
  return n > 9223372036854775807n ? 9223372036854775807n : n < -9223372036854775808n ? -9223372036854775808n : n;
}

/** `sqlite3_column_double`: TEXT by its leading number, else 0. */
function toDouble(value: Exclude<Value, null>): number {
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  const text = typeof value === "string" ? value : Buffer.from(value).toString("latin1");
  const n = parseFloat(text.trimStart());
  return Number.isNaN(n) ? 0 : n;
}

/**
 * SQLite's `printf('%.3f')`, as the corpus printed R columns: rounded half up at the third decimal, and at
 * most 16 significant digits, the rest written as zeros (-9223372036854775808.0 prints -9223372036854776000.000).
 */
function fixed3(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Inf" : "-Inf";
  if (Math.abs(x) < 1e13) return x.toFixed(3);
  const [mantissa = "", exponentText = "0"] = Math.abs(x).toExponential(15).split("e");
  const digits = mantissa.replace(".", "");
  const integerDigits = Number(exponentText) + 1;
  const integer = integerDigits >= digits.length ? digits.padEnd(integerDigits, "0") : digits.slice(0, integerDigits);
  const fraction = (integerDigits >= digits.length ? "" : digits.slice(integerDigits)).padEnd(3, "0").slice(0, 3);
  return `${x < 0 ? "-" : ""}${integer}.${fraction}`;
}

/** One value as sqllogictest prints it for its column's type letter (I, R or T). */
export function formatValue(type: string, value: Value): string {
  if (value === null) return "NULL";
  if (type === "I") return String(toInt64(value));
  if (type === "R") return fixed3(toDouble(value));
  let bytes: Uint8Array;
  if (typeof value === "string") bytes = Buffer.from(value, "utf8");
  else if (typeof value === "bigint") bytes = Buffer.from(String(value));
  else if (typeof value === "number") bytes = Buffer.from(realText(value));
  else bytes = value;
  if (bytes.length === 0) return "(empty)";
  let text = "";
  for (const byte of bytes) text += byte < 0x20 || byte > 0x7e ? "@" : String.fromCharCode(byte);
  return text;
}

/** The record's answer as sqllogictest lists it: formatted, sorted as its sort mode says. */
function formatResult(types: string, sort: string, rows: Value[][]): string[] {
  const formatted = rows.map((row) => row.map((value, i) => formatValue(types[i] ?? "T", value)));
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  if (sort === "rowsort")
    formatted.sort((a, b) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) {
        const c = compare(a[i]!, b[i]!);
        if (c !== 0) return c;
      }
      return a.length - b.length;
    });
  const values = formatted.flat();
  if (sort === "valuesort") values.sort(compare);
  return values;
}

function md5OfValues(values: string[]): string {
  const hash = createHash("md5");
  for (const value of values) hash.update(`${value}\n`);
  return hash.digest("hex");
}

function matches(expected: Expected, values: string[]): boolean {
  if (expected.kind === "hash") return values.length === expected.count && md5OfValues(values) === expected.md5;
  return values.length === expected.values.length && values.every((value, i) => value === expected.values[i]);
}

// ---------------------------------------------------------------------------------------------------------------
// Local SQLite: building the tables, snapshots of them, the reference answer

type ItemType = "INTEGER" | "DOUBLE" | "STRING";

interface TableColumn {
  name: string;
  declared: string;
  type: ItemType;
  /** false when the item's type cannot hold the column exactly (affinity or values differ from SQLite's). */
  exact: boolean;
}

interface TableDump {
  name: string;
  columns: TableColumn[];
  csv: string;
  rows: number;
}

interface ViewDef {
  name: string;
  columns: string[] | null;
  select: string;
}

interface Snapshot {
  index: number;
  dataset: string;
  tables: TableDump[];
  views: ViewDef[];
  hash: string;
}

/** SQLite's affinity for a declared type (the rules of "Determination Of Column Affinity"). */
function affinity(declared: string): "INTEGER" | "TEXT" | "BLOB" | "REAL" | "NUMERIC" {
  const upper = declared.toUpperCase();
  if (upper.includes("INT")) return "INTEGER";
  if (/CHAR|CLOB|TEXT/.test(upper)) return "TEXT";
  if (upper.includes("BLOB") || upper.trim() === "") return "BLOB";
  if (/REAL|FLOA|DOUB/.test(upper)) return "REAL";
  return "NUMERIC";
}

/** The item type for a column: its affinity's, unless its values need another; `exact` says whether nothing changes. */
function itemType(declared: string, values: Value[]): { type: ItemType; exact: boolean } {
  const has = { int: false, real: false, text: false, blob: false };
  for (const value of values) {
    if (value === null) continue;
    if (typeof value === "bigint") has.int = true;
    else if (typeof value === "number") has.real = true;
    else if (typeof value === "string") has.text = true;
    else has.blob = true;
  }
  const numeric = has.int || has.real;
  const other = has.text || has.blob;
  switch (affinity(declared)) {
    case "TEXT":
      return { type: "STRING", exact: !has.blob && !numeric };
    case "INTEGER":
    case "NUMERIC":
      if (!other && !has.real) return { type: "INTEGER", exact: true };
      if (!other) return { type: "DOUBLE", exact: !has.int };
      return { type: "STRING", exact: false };
    case "REAL":
      return other ? { type: "STRING", exact: false } : { type: "DOUBLE", exact: true };
    case "BLOB":
      // No affinity: an item column always has one, so comparisons with other types may differ.
      if (!other && !has.real) return { type: "INTEGER", exact: false };
      if (!other) return { type: "DOUBLE", exact: false };
      return { type: "STRING", exact: false };
  }
}

function csvField(value: Value, type: ItemType, onlyColumn = false): string {
  // A NULL alone on its line would be a blank line, which the upload skips at the end of a file: `""` is NULL
  // in any column but a STRING one (where a blank line stays the only way to write it).
  if (value === null) return onlyColumn && type !== "STRING" ? '""' : "";
  if (typeof value === "bigint") return String(value);
  if (typeof value === "number") return type === "STRING" ? realText(value) : String(value);
  const text = typeof value === "string" ? value : Buffer.from(value).toString("latin1");
  // A quoted empty field is the empty string in a STRING column; an unquoted one is NULL.
  return text === "" || /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Every table's rows (in rowid order, as SQLite scans them) and every view, as they are now. */
function dumpDatabase(db: DatabaseSync): { tables: TableDump[]; views: ViewDef[] } {
  const objects = db
    .prepare("SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")
    .all() as { type: string; name: string; sql: string }[];
  const tables: TableDump[] = [];
  const views: ViewDef[] = [];
  for (const object of objects) {
    if (object.type === "view") {
      views.push(parseView(object.name, object.sql));
      continue;
    }
    const info = db.prepare(`PRAGMA table_info(${quoteIdent(object.name)})`).all() as { name: string; type: string }[];
    const withoutRowid = /WITHOUT\s+ROWID\s*$/i.test(object.sql);
    const select = db.prepare(`SELECT * FROM ${quoteIdent(object.name)}${withoutRowid ? "" : " ORDER BY _rowid_"}`);
    select.setReadBigInts(true);
    select.setReturnArrays(true);
    const rows = select.all() as unknown as Value[][];
    const columns = info.map((column, i) => ({
      name: column.name,
      declared: column.type,
      ...itemType(
        column.type,
        rows.map((row) => row[i] ?? null),
      ),
    }));
    const lines = [columns.map((column) => csvField(column.name, "STRING")).join(",")];
    for (const row of rows)
      lines.push(row.map((value, i) => csvField(value, columns[i]!.type, columns.length === 1)).join(","));
    tables.push({ name: object.name, columns, csv: lines.join("\n") + "\n", rows: rows.length });
  }
  return { tables, views };
}

/** `CREATE VIEW name [(columns)] AS select`: its column list and its SELECT. */
function parseView(name: string, sql: string): ViewDef {
  const tokens = tokenize(sql);
  let i = 0;
  const significant = tokens.filter((token) => token.kind !== "space");
  // Skip CREATE [TEMP] VIEW [IF NOT EXISTS] name
  while (i < significant.length && !(significant[i]!.kind === "word" && upper(significant[i]!) === "VIEW")) i++;
  i++;
  if (upper(significant[i]!) === "IF") i += 3;
  i++; // the name
  if (significant[i]?.text === ".") i += 2;
  let columns: string[] | null = null;
  if (significant[i]?.text === "(") {
    columns = [];
    i++;
    while (i < significant.length && significant[i]!.text !== ")") {
      if (significant[i]!.text !== ",") columns.push(identifierName(significant[i]!));
      i++;
    }
    i++;
  }
  // significant[i] is AS: the SELECT starts after it.
  const as = significant[i]!;
  return { name, columns, select: sql.slice(as.start + as.text.length).trim() };
}

// ---------------------------------------------------------------------------------------------------------------
// Rewriting a query's table names to data items

interface Token {
  kind: "space" | "word" | "quoted" | "string" | "number" | "punct";
  text: string;
  start: number;
}

/** A plain SQLite tokenizer: enough to find names outside strings and comments. */
function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const start = i;
    const c = sql[i]!;
    const push = (kind: Token["kind"]) => tokens.push({ kind, text: sql.slice(start, i), start });
    if (/\s/.test(c)) {
      while (i < sql.length && /\s/.test(sql[i]!)) i++;
      push("space");
    } else if (c === "-" && sql[i + 1] === "-") {
      while (i < sql.length && sql[i] !== "\n") i++;
      push("space");
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end < 0 ? sql.length : end + 2;
      push("space");
    } else if (c === "'" || c === '"' || c === "`") {
      i++;
      for (;;) {
        if (i >= sql.length) break;
        if (sql[i] === c) {
          if (sql[i + 1] === c) i += 2;
          else {
            i++;
            break;
          }
        } else i++;
      }
      push(c === "'" ? "string" : "quoted");
    } else if (c === "[") {
      const end = sql.indexOf("]", i);
      i = end < 0 ? sql.length : end + 1;
      push("quoted");
    } else if (/[xX]/.test(c) && sql[i + 1] === "'") {
      i += 2;
      while (i < sql.length && sql[i] !== "'") i++;
      i++;
      push("string");
    } else if (/[A-Za-z_\u0080-\uffff]/.test(c)) {
      while (i < sql.length && /[A-Za-z0-9_$\u0080-\uffff]/.test(sql[i]!)) i++;
      push("word");
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(sql[i + 1] ?? ""))) {
      while (i < sql.length && /[0-9A-Za-z_.]/.test(sql[i]!)) {
        if (/[eE]/.test(sql[i]!) && /[+-]/.test(sql[i + 1] ?? "")) i++;
        i++;
      }
      push("number");
    } else {
      i++;
      push("punct");
    }
  }
  return tokens;
}

function upper(token: Token | undefined): string {
  return token?.kind === "word" ? token.text.toUpperCase() : "";
}

function identifierName(token: Token): string {
  if (token.kind === "quoted") {
    const inner = token.text.slice(1, -1);
    return token.text.startsWith("[") ? inner : inner.replace(token.text[0] === "`" ? /``/g : /""/g, token.text[0]!);
  }
  return token.text;
}

// Keywords that may follow a table in a FROM list without being its alias.
const NOT_AN_ALIAS = new Set(
  `JOIN LEFT RIGHT FULL INNER OUTER CROSS NATURAL ON USING INDEXED NOT WHERE GROUP HAVING WINDOW ORDER LIMIT
   UNION INTERSECT EXCEPT RETURNING`.split(/\s+/),
);
// Keywords that end a FROM list at their parenthesis depth.
const FROM_LIST_END = new Set(
  "WHERE GROUP HAVING WINDOW ORDER LIMIT UNION INTERSECT EXCEPT RETURNING SELECT VALUES SET".split(" "),
);

/**
 * Rewrites every table of the snapshot named where SQLite reads a table (after FROM, JOIN, a FROM list's
 * comma, or IN) to its data item `slt.<dataset>.<table>`, and every view to its SELECT (rewritten the same way)
 * as a subquery keeping the view's name as alias. Qualified columns (`t1.a`) keep working: the service lets a
 * query qualify columns with the item's name.
 */
export function rewriteQuery(sql: string, snapshot: Pick<Snapshot, "dataset" | "tables" | "views">, depth = 0): string {
  const tables = new Map(snapshot.tables.map((table) => [table.name.toLowerCase(), table]));
  const views = new Map(snapshot.views.map((view) => [view.name.toLowerCase(), view]));
  const tokens = tokenize(sql);
  const significant = tokens.filter((token) => token.kind !== "space");
  // Per parenthesis depth: whether a FROM list is open there.
  const fromOpen: boolean[] = [false];
  const edits: { start: number; end: number; text: string }[] = [];
  for (let k = 0; k < significant.length; k++) {
    const token = significant[k]!;
    const word = upper(token);
    // A parenthesis in a FROM list that does not start a subquery groups a join: `FROM (t1 AS a CROSS JOIN t2)`.
    if (token.text === "(") {
      const opener = upper(significant[k - 1]);
      const listed = significant[k - 1]?.text === "," && fromOpen[fromOpen.length - 1] === true;
      const subquery = ["SELECT", "VALUES", "WITH"].includes(upper(significant[k + 1]));
      fromOpen.push((opener === "FROM" || opener === "JOIN" || listed) && !subquery);
    } else if (token.text === ")") fromOpen.pop();
    else if (word === "FROM") fromOpen[fromOpen.length - 1] = true;
    else if (FROM_LIST_END.has(word)) fromOpen[fromOpen.length - 1] = false;
    if (token.kind !== "word" && token.kind !== "quoted") continue;
    const name = identifierName(token).toLowerCase();
    const table = tables.get(name);
    const view = views.get(name);
    if (!table && !view) continue;
    const before = significant[k - 1];
    const after = significant[k + 1];
    if (before?.text === "." || after?.text === ".") continue;
    const previous = upper(before);
    const inFromList = (before?.text === "," || before?.text === "(") && fromOpen[fromOpen.length - 1] === true;
    const afterIn = previous === "IN" && after?.text !== "(";
    if (!(previous === "FROM" || previous === "JOIN" || inFromList || afterIn)) continue;
    let text: string;
    if (table) text = `${ACCOUNT}.${snapshot.dataset}.${table.name.toLowerCase()}`;
    else {
      if (depth > 16) throw new Error(`views nested too deep at ${view!.name}`);
      const inner = rewriteQuery(view!.select, snapshot, depth + 1);
      const body = view!.columns
        ? `WITH ${quoteIdent(view!.name)}(${view!.columns.map(quoteIdent).join(", ")}) AS (${inner}) SELECT * FROM ${quoteIdent(view!.name)}`
        : inner;
      const aliasFollows =
        upper(after) === "AS" ||
        (after !== undefined &&
          (after.kind === "quoted" || (after.kind === "word" && !NOT_AN_ALIAS.has(upper(after)))));
      text = afterIn || aliasFollows ? `(${body})` : `(${body}) AS ${quoteIdent(view!.name)}`;
    }
    edits.push({ start: token.start, end: token.start + token.text.length, text });
  }
  let out = sql;
  for (const edit of edits.reverse()) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// A test file planned: snapshots of its tables and its queries with SQLite's own answers

interface PlannedQuery {
  file: string;
  line: number;
  types: string;
  sort: string;
  sql: string;
  expected: Expected;
  snapshot: number;
  /** What the local SQLite answered, formatted and sorted (or its error). */
  local: { ok: true; values: string[]; rows: Value[][] } | { ok: false; message: string };
  /** Tables the query reads whose item types are approximate (see itemType). */
  approximate: string[];
}

interface PlannedFile {
  file: string;
  snapshots: Snapshot[];
  queries: PlannedQuery[];
  skipped: number;
  /** Query records left out by --limit. */
  limited: number;
  /** Statements that failed locally though the corpus says ok (the tables may then differ from the corpus's). */
  statementProblems: string[];
}

const DATA_UNCHANGED = /^\s*(CREATE\s+(UNIQUE\s+)?INDEX|DROP\s+INDEX|REINDEX|ANALYZE|CREATE\s+TRIGGER|DROP\s+TRIGGER)/i;

function planFile(file: string, text: string, limit: number): PlannedFile {
  const db = new DatabaseSync(":memory:");
  const records = parseTestFile(text);
  const snapshots: Snapshot[] = [];
  const queries: PlannedQuery[] = [];
  const statementProblems: string[] = [];
  let skipped = 0;
  let limited = 0;
  let dirty = true;
  const datasetBase = file.replace(/[^A-Za-z0-9_]/g, "_");
  for (const record of records) {
    if (record.kind === "halt") {
      if (record.skip) continue;
      break;
    }
    if (record.kind === "statement") {
      if (record.skip) continue;
      try {
        db.exec(record.sql);
        if (record.expectError) statementProblems.push(`line ${record.line}: succeeded, corpus expects an error`);
        if (!DATA_UNCHANGED.test(record.sql)) dirty = true;
      } catch (error) {
        if (!record.expectError) statementProblems.push(`line ${record.line}: ${(error as Error).message}`);
      }
      continue;
    }
    if (record.skip) {
      skipped++;
      continue;
    }
    if (queries.length >= limit) {
      limited++;
      continue;
    }
    if (dirty) {
      const { tables, views } = dumpDatabase(db);
      const hash = createHash("sha256").update(JSON.stringify({ tables, views })).digest("hex");
      const last = snapshots.at(-1);
      if (!last || last.hash !== hash)
        snapshots.push({
          index: snapshots.length,
          dataset: `${datasetBase}_s${snapshots.length}`,
          tables,
          views,
          hash,
        });
      dirty = false;
    }
    const snapshot = snapshots.at(-1)!;
    let local: PlannedQuery["local"];
    try {
      const statement = db.prepare(record.sql);
      statement.setReadBigInts(true);
      statement.setReturnArrays(true);
      const rows = statement.all() as unknown as Value[][];
      local = { ok: true, rows, values: formatResult(record.types, record.sort, rows) };
    } catch (error) {
      local = { ok: false, message: (error as Error).message };
    }
    const lower = record.sql.toLowerCase();
    const approximate = snapshot.tables
      .filter((table) => table.columns.some((column) => !column.exact))
      .filter((table) => new RegExp(`\\b${table.name.toLowerCase()}\\b`).test(lower))
      .map((table) => table.name);
    queries.push({
      file,
      line: record.line,
      types: record.types,
      sort: record.sort,
      sql: record.sql,
      expected: record.expected,
      snapshot: snapshot.index,
      local,
      approximate,
    });
  }
  db.close();
  return { file, snapshots, queries, skipped, limited, statementProblems };
}

// ---------------------------------------------------------------------------------------------------------------
// The service

interface Envelope {
  Status?: { Code: number; Message: string };
  Data?: unknown;
}

interface ResultPage {
  Columns: { Name: string; DataType: string }[];
  Rows: (string | number | boolean | null)[][];
  RowCount: number;
  NextCursor: string | null;
}

type ServiceOutcome =
  | { ok: true; engine: string; rows: Value[][]; queryId: string }
  | { ok: false; engine: string | null; message: string; queryId: string | null };

class Api {
  private token = "";
  requests = 0;

  readonly baseUrl: string;
  private readonly username: string;
  /** wrangler's output so far, to quote the log of a 5xx by its request id. */
  private readonly serverLog: () => string;
  /** Uploads that failed with a 5xx and were sent again. */
  readonly retriedUploads: string[] = [];

  constructor(baseUrl: string, username: string, serverLog: () => string) {
    this.baseUrl = baseUrl;
    this.username = username;
    this.serverLog = serverLog;
  }

  /** The log lines naming a request id quoted in a 500's message. */
  explain(message: string): string {
    const id = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/.exec(message)?.[0];
    if (!id) return "";
    return this.serverLog()
      .split("\n")
      .filter((line) => line.includes(id))
      .map((line) => line.slice(0, 600))
      .join("\n");
  }

  async login(): Promise<void> {
    this.token = (await loginTokens(this.baseUrl, this.username)).AccessToken;
  }

  /** A request with the token: a 429 or 503 waits (Retry-After) and tries again, a 401 logs in again. */
  async call(path: string, init: RequestInit = {}): Promise<{ status: number; json: Envelope | null; text: string }> {
    for (let attempt = 0; ; attempt++) {
      this.requests++;
      let response: Response;
      try {
        response = await fetch(new URL(path, this.baseUrl), {
          ...init,
          redirect: "manual",
          headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${this.token}` },
        });
      } catch (error) {
        if (attempt < 5) {
          await sleep(1000 * (attempt + 1));
          continue;
        }
        throw error;
      }
      const text = await response.text();
      if ((response.status === 429 || response.status === 503) && attempt < 30) {
        await sleep(Math.max(1, Number(response.headers.get("retry-after")) || 1) * 1000);
        continue;
      }
      if (response.status === 401 && attempt < 2) {
        await this.login();
        continue;
      }
      let json: Envelope | null = null;
      try {
        json = JSON.parse(text) as Envelope;
      } catch {
        json = null;
      }
      return { status: response.status, json, text };
    }
  }

  async location(path: string): Promise<string | null> {
    const response = await fetch(new URL(path, this.baseUrl), {
      redirect: "manual",
      headers: { authorization: `Bearer ${this.token}` },
    });
    this.requests++;
    await response.arrayBuffer();
    return response.headers.get("location");
  }

  async createDataset(dataset: string): Promise<void> {
    const answer = await this.call(`/v1/dataset/${ACCOUNT}/${dataset}`, { method: "PUT" });
    if (answer.status !== 200 && answer.status !== 201)
      throw new Error(`creating dataset ${dataset}: ${answer.status} ${answer.text}`);
  }

  async upload(dataset: string, table: TableDump): Promise<void> {
    const schema = {
      SchemaVersion: "1.0",
      TableDefinition: {
        Columns: table.columns.map((column) => ({ Name: column.name, DataType: { DataType: column.type } })),
      },
      DataSpecification: { FormatType: "CSV", DataOptions: { Header: true, Delimiter: "," } },
    };
    for (let attempt = 1; ; attempt++) {
      const form = new FormData();
      form.append("Schema", JSON.stringify(schema));
      form.append("Data", new Blob([table.csv], { type: "text/csv" }), `${table.name}.csv`);
      const answer = await this.call(`/v1/data/${ACCOUNT}/${dataset}/${table.name.toLowerCase()}`, {
        method: "POST",
        body: form,
      });
      if (answer.status === 200 || answer.status === 201) return;
      const message = `uploading ${dataset}/${table.name}: ${answer.status} ${answer.json?.Status?.Message ?? answer.text}`;
      if (answer.status < 500 || attempt >= 4) throw new Error(message);
      // A 500 seen now and then under load (the local processes share one state): log it and send it again.
      const log = this.explain(message);
      process.stderr.write(`${message} (attempt ${attempt}; sending again)\n${log}\n`);
      this.retriedUploads.push(`${message}${log ? ` — log: ${log.replace(/\s+/g, " ").slice(0, 400)}` : ""}`);
      await sleep(2000 * attempt);
    }
  }

  /** Waits until the item is query-ready (its images or its table store); false after the time-out or a failed store. */
  async waitReady(dataset: string, item: string, timeoutMs: number): Promise<{ ready: boolean; store: string | null }> {
    const started = Date.now();
    for (;;) {
      const answer = await this.call(`/v1/data/${ACCOUNT}/${dataset}/${item}/metadata/storage`);
      const data = answer.json?.Data as
        { QueryReady: boolean; TableStore?: { State: string; Message: string | null } | null } | undefined;
      const store = data?.TableStore
        ? `${data.TableStore.State}${data.TableStore.Message ? `: ${data.TableStore.Message}` : ""}`
        : null;
      if (data?.QueryReady) return { ready: true, store };
      if (data?.TableStore?.State === "failed" || Date.now() - started > timeoutMs) return { ready: false, store };
      await sleep(250);
    }
  }

  /** Runs one query: submit with Prefer: wait, the status until it ends, then its rows (JSON pages, or the CSV). */
  async run(sql: string, types: string): Promise<ServiceOutcome> {
    const submitted = await this.call("/v1/query", {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=30" },
      body: JSON.stringify({ Sql: sql, Reuse: false }),
    });
    const submitData = submitted.json?.Data as { QueryId?: string; FirstPage?: ResultPage } | undefined;
    const queryId = submitData?.QueryId ?? null;
    if (!queryId)
      return {
        ok: false,
        engine: null,
        queryId: null,
        message: `submit ${submitted.status}: ${submitted.json?.Status?.Message ?? submitted.text.slice(0, 300)}`,
      };
    let status: { Status: string; Message: string; Engine?: string | null } | undefined;
    const started = Date.now();
    for (;;) {
      const answer = await this.call(`/v1/query/${queryId}/status`);
      status = answer.json?.Data as typeof status;
      if (status && ["succeeded", "failed", "cancelled"].includes(status.Status)) break;
      if (Date.now() - started > 600_000)
        return { ok: false, engine: null, queryId, message: `still ${status?.Status} after 600 s` };
      await sleep(100);
    }
    const engine = status.Engine ?? "none";
    if (status.Status !== "succeeded") return { ok: false, engine, queryId, message: status.Message };
    let page = submitData?.FirstPage;
    if (!page) {
      const answer = await this.call(`/v1/query/${queryId}/results/rows?limit=10000`);
      page = answer.json?.Data as ResultPage | undefined;
      if (!page) return { ok: false, engine, queryId, message: `rows ${answer.status}: ${answer.text.slice(0, 300)}` };
    }
    const columnTypes = page.Columns.map((column) => column.DataType);
    // JSON numbers cannot tell a whole REAL (2.0) from an INTEGER: where a T column is DOUBLE, read the CSV.
    const needsCsv = columnTypes.some((type, i) => type === "DOUBLE" && (types[i] ?? "T") === "T");
    if (needsCsv) {
      const to = await this.location(`/v1/query/${queryId}/results/rawdata`);
      if (!to) return { ok: false, engine, queryId, message: "rawdata gave no redirect" };
      const csv = await (await fetch(new URL(to, this.baseUrl))).text();
      const rows = parseCsv(csv).slice(1);
      return {
        ok: true,
        engine,
        queryId,
        rows: rows.map((row) => row.map((text, i) => csvValue(text, columnTypes[i]))),
      };
    }
    const rows: Value[][] = page.Rows.map((row) => row.map((value, i) => jsonToValue(value, columnTypes[i])));
    let cursor = page.NextCursor;
    while (cursor) {
      const answer = await this.call(
        `/v1/query/${queryId}/results/rows?limit=10000&cursor=${encodeURIComponent(cursor)}`,
      );
      const next = answer.json?.Data as ResultPage | undefined;
      if (!next) return { ok: false, engine, queryId, message: `rows ${answer.status}: ${answer.text.slice(0, 300)}` };
      rows.push(...next.Rows.map((row) => row.map((value, i) => jsonToValue(value, columnTypes[i]))));
      cursor = next.NextCursor;
    }
    return { ok: true, engine, queryId, rows };
  }
}

function jsonToValue(value: string | number | boolean | null, type: string | undefined): Value {
  if (value === null) return null;
  if (typeof value === "boolean") return value ? 1n : 0n;
  if (type === "INTEGER") return BigInt(value);
  if (type === "DOUBLE") return typeof value === "number" ? value : csvValue(value, type);
  return String(value);
}

/** A result CSV field typed by its column: an empty field is NULL (the CSV writes '' as NULL). */
function csvValue(text: string, type: string | undefined): Value {
  if (text === "") return null;
  if (type === "INTEGER") return BigInt(text);
  if (type === "DOUBLE") {
    if (/^[+-]?\d+$/.test(text)) return BigInt(text);
    if (/^[+-]?inf/i.test(text)) return text.startsWith("-") ? -Infinity : Infinity;
    return Number(text);
  }
  return text;
}

/** RFC 4180 rows. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      field += c;
      i++;
      continue;
    }
    if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
    } else field += c;
    i++;
  }
  if (field !== "" || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------------------------
// Comparing and reporting

type Verdict =
  /** The service's answer is the corpus's. */
  | "agree"
  /** It differs only where the corpus has '' and the service NULL (its result CSV writes '' as NULL). */
  | "empty-as-null"
  /** A different answer. */
  | "wrong"
  /** The service refused or failed the query. */
  | "error";

interface Checked {
  file: string;
  line: number;
  types: string;
  sort: string;
  sql: string;
  rewritten: string;
  verdict: Verdict;
  engine: string | null;
  expected: string;
  got: string;
  /** Whether the local SQLite (node:sqlite) gives the corpus's answer. */
  localAgrees: boolean;
  /** The local SQLite's answer where the corpus's is a hash. */
  local: string;
  approximate: string[];
  queryId: string | null;
}

function describeExpected(expected: Expected): string {
  return expected.kind === "hash"
    ? `${expected.count} values hashing to ${expected.md5}`
    : expected.values.slice(0, 24).join(" ") +
        (expected.values.length > 24 ? ` … (${expected.values.length} values)` : "");
}

function describeValues(values: string[]): string {
  const shown = values.slice(0, 24).join(" ") + (values.length > 24 ? " …" : "");
  return `${shown} (${values.length} values, md5 ${md5OfValues(values)})`;
}

function check(query: PlannedQuery, rewritten: string, outcome: ServiceOutcome): Checked {
  const localAgrees = query.local.ok && matches(query.expected, query.local.values);
  const base = {
    file: query.file,
    line: query.line,
    types: query.types,
    sort: query.sort,
    sql: query.sql,
    rewritten,
    engine: outcome.engine,
    expected: describeExpected(query.expected),
    localAgrees,
    local: query.local.ok ? describeValues(query.local.values) : `error: ${query.local.message}`,
    approximate: query.approximate,
    queryId: outcome.queryId,
  };
  if (!outcome.ok) return { ...base, verdict: "error", got: outcome.message };
  const values = formatResult(query.types, query.sort, outcome.rows);
  if (matches(query.expected, values)) return { ...base, verdict: "agree", got: describeValues(values) };
  // The service cannot return '': compare with the local answer, its '' read as NULL on both sides.
  if (query.local.ok && localAgrees) {
    const asNull = (rows: Value[][]) => rows.map((row) => row.map((value) => (value === "" ? null : value)));
    const mine = formatResult(query.types, query.sort, asNull(query.local.rows));
    const theirs = formatResult(query.types, query.sort, asNull(outcome.rows));
    if (mine.length === theirs.length && mine.every((value, i) => value === theirs[i]))
      return { ...base, verdict: "empty-as-null", got: describeValues(values) };
  }
  return { ...base, verdict: "wrong", got: describeValues(values) };
}

interface FileSummary {
  file: string;
  ranAt: string;
  seconds: number;
  records: number;
  skipped: number;
  limited: number;
  counts: Record<Verdict, number>;
  /** Verdict counts per engine that ran the query (`none`: refused before any engine). */
  engines: Record<string, Record<Verdict, number>>;
  /** Queries whose local SQLite answer differs from the corpus's (whatever the service said). */
  localDisagrees: number;
  statementProblems: string[];
  snapshots: number;
  storeProblems: string[];
}

interface ModeResults {
  mode: "sqljs" | "store";
  vars: Record<string, string>;
  files: Record<string, FileSummary>;
  disagreements: Checked[];
}

function emptyCounts(): Record<Verdict, number> {
  return { agree: 0, "empty-as-null": 0, wrong: 0, error: 0 };
}

async function runFile(
  api: Api,
  planned: PlannedFile,
  store: boolean,
  batch: number,
): Promise<{ summary: FileSummary; checked: Checked[] }> {
  const started = performance.now();
  const storeProblems: string[] = [];
  const progress = (text: string) => process.stderr.write(`[${planned.file}] ${text}\n`);
  for (const snapshot of planned.snapshots) {
    await api.createDataset(snapshot.dataset);
    for (const table of snapshot.tables) await api.upload(snapshot.dataset, table);
    // Query-ready: column images, or the table store (a failed image build is not reported: wait a minute at most).
    const until = Date.now() + (store ? 300_000 : 60_000);
    for (const table of snapshot.tables) {
      const ready = await api.waitReady(snapshot.dataset, table.name.toLowerCase(), Math.max(0, until - Date.now()));
      if (!ready.ready)
        storeProblems.push(`${snapshot.dataset}.${table.name}: not query-ready (${ready.store ?? "no table store"})`);
      else if (store && table.rows > 0 && !ready.store?.startsWith("ready"))
        storeProblems.push(`${snapshot.dataset}.${table.name}: no table store (${ready.store ?? "none"})`);
    }
  }
  progress(`${planned.snapshots.length} snapshot(s) uploaded; ${planned.queries.length} queries`);
  const checked: Checked[] = new Array(planned.queries.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    for (;;) {
      const index = next++;
      if (index >= planned.queries.length) return;
      const query = planned.queries[index]!;
      const snapshot = planned.snapshots[query.snapshot]!;
      let rewritten = query.sql;
      let outcome: ServiceOutcome;
      try {
        rewritten = rewriteQuery(query.sql, snapshot);
        outcome = await api.run(rewritten, query.types);
      } catch (error) {
        outcome = { ok: false, engine: null, queryId: null, message: `harness: ${(error as Error).message}` };
      }
      checked[index] = check(query, rewritten, outcome);
      if (++done % 100 === 0) progress(`${done}/${planned.queries.length}`);
    }
  };
  await Promise.all(Array.from({ length: batch }, worker));
  const counts = emptyCounts();
  const engines: Record<string, Record<Verdict, number>> = {};
  for (const result of checked) {
    counts[result.verdict]++;
    (engines[result.engine ?? "none"] ??= emptyCounts())[result.verdict]++;
  }
  const summary: FileSummary = {
    file: planned.file,
    ranAt: new Date().toISOString(),
    seconds: Math.round((performance.now() - started) / 100) / 10,
    records: planned.queries.length,
    skipped: planned.skipped,
    limited: planned.limited,
    counts,
    engines,
    localDisagrees: planned.queries.filter((query) => !(query.local.ok && matches(query.expected, query.local.values)))
      .length,
    statementProblems: planned.statementProblems.slice(0, 20),
    snapshots: planned.snapshots.length,
    storeProblems: [...storeProblems, ...api.retriedUploads.splice(0)].slice(0, 20),
  };
  progress(`done in ${summary.seconds} s: ${JSON.stringify(counts)}`);
  return { summary, checked };
}

function failedSummary(planned: PlannedFile): FileSummary {
  return {
    file: planned.file,
    ranAt: new Date().toISOString(),
    seconds: 0,
    records: 0,
    skipped: planned.skipped,
    limited: planned.limited + planned.queries.length,
    counts: emptyCounts(),
    engines: {},
    localDisagrees: 0,
    statementProblems: [],
    snapshots: planned.snapshots.length,
    storeProblems: [],
  };
}

function resultsPath(mode: string): string {
  return join(RESULTS, `sqllogictest-${mode}.json`);
}

function readResults(mode: "sqljs" | "store"): ModeResults | null {
  const path = resultsPath(mode);
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as ModeResults) : null;
}

function cell(text: string, max = 400): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return (flat.length > max ? `${flat.slice(0, max)} …` : flat).replace(/\|/g, "\\|");
}

/** Groups error messages: numbers and quoted names taken out, so one cause is one row. */
function messageKey(message: string): string {
  return message
    .replace(/query [0-9a-f-]{36}/g, "query …")
    .replace(/\d+(\.\d+)?/g, "N")
    .replace(/"[^"]*"|'[^']*'|`[^`]*`/g, "…")
    .slice(0, 200);
}

function markdown(results: ModeResults[]): string {
  const out: string[] = [];
  out.push("# sqllogictest through dqs", "");
  out.push(
    "Made by `npm run bench:slt` (bench/sqllogictest.ts; bench/README.md, section sqllogictest, says how).",
    "Agree: the service's answer formatted as sqllogictest does is the corpus's (its values or their MD5).",
    "''→NULL: differs only where the corpus has an empty string and the service NULL (the result CSV writes both as an empty field).",
    "Wrong: another answer. Error: the query was refused or failed. Local ≠: records where the local SQLite (node:sqlite) itself differs from the corpus.",
    "Queries: the query records run (`--limit` leaves some out); skipped: records not for SQLite (`skipif sqlite`, `onlyif` another engine).",
    "",
  );
  out.push(
    "| mode | file | queries | skipped | agree | ''→NULL | wrong | error | local ≠ | engines (agree/ran) | s | run at |",
    "| ---- | ---- | ------: | ------: | ----: | ------: | ----: | ----: | ------: | ------------------- | -: | ------ |",
  );
  for (const result of results) {
    const total = { records: 0, skipped: 0, localDisagrees: 0, seconds: 0, counts: emptyCounts() };
    for (const summary of Object.values(result.files)) {
      if (summary.records === 0 && summary.limited === 0 && summary.statementProblems.length === 0) continue;
      const engines = Object.entries(summary.engines)
        .map(([engine, counts]) => `${engine} ${counts.agree}/${Object.values(counts).reduce((a, b) => a + b, 0)}`)
        .join(", ");
      out.push(
        `| ${result.mode} | ${summary.file} | ${summary.records}${summary.limited ? ` (+${summary.limited} not run)` : ""} | ${summary.skipped} | ${summary.counts.agree} | ${summary.counts["empty-as-null"]} | ${summary.counts.wrong} | ${summary.counts.error} | ${summary.localDisagrees} | ${engines} | ${summary.seconds} | ${summary.ranAt.slice(0, 16).replace("T", " ")} |`,
      );
      total.records += summary.records;
      total.skipped += summary.skipped;
      total.localDisagrees += summary.localDisagrees;
      total.seconds += summary.seconds;
      for (const verdict of Object.keys(total.counts) as Verdict[]) total.counts[verdict] += summary.counts[verdict];
    }
    out.push(
      `| **${result.mode}** | **all** | **${total.records}** | ${total.skipped} | **${total.counts.agree}** | ${total.counts["empty-as-null"]} | ${total.counts.wrong} | ${total.counts.error} | ${total.localDisagrees} | | ${Math.round(total.seconds)} | |`,
    );
  }
  const empty = [
    ...new Set(
      results.flatMap((result) =>
        Object.values(result.files)
          .filter((summary) => summary.records === 0 && summary.limited === 0)
          .map((summary) => summary.file),
      ),
    ),
  ];
  out.push("");
  if (empty.length) out.push(`No query record for SQLite in: ${empty.join(", ")} (statements only).`, "");
  for (const result of results) {
    out.push(
      `## ${result.mode}: ${result.mode === "store" ? "every item with rows in a table store" : "default settings"}`,
      "",
    );
    out.push(`Vars: \`${JSON.stringify(result.vars)}\`.`, "");
    const problems = Object.values(result.files).flatMap((summary) => [
      ...summary.statementProblems.map((problem) => `${summary.file}: statement ${problem}`),
      ...summary.storeProblems.map((problem) => `${summary.file}: ${problem}`),
    ]);
    if (problems.length) out.push("Setup notes:", "", ...problems.slice(0, 20).map((problem) => `- ${problem}`), "");
    const errors = new Map<string, { count: number; example: string }>();
    for (const item of result.disagreements.filter((entry) => entry.verdict === "error")) {
      const key = messageKey(item.got);
      const entry = errors.get(key) ?? { count: 0, example: `${item.file}:${item.line}` };
      entry.count++;
      errors.set(key, entry);
    }
    if (errors.size) {
      out.push("Errors by message:", "", "| count | message | first at |", "| ----: | ------- | -------- |");
      for (const [key, entry] of [...errors].sort((a, b) => b[1].count - a[1].count).slice(0, 20))
        out.push(`| ${entry.count} | ${cell(key, 300)} | ${entry.example} |`);
      out.push("");
    }
    const shown = result.disagreements.slice(0, 30);
    out.push(
      `First ${shown.length} of ${result.disagreements.length} disagreements${result.disagreements.length >= KEPT_DISAGREEMENTS ? "+" : ""}:`,
      "",
    );
    for (const item of shown) {
      out.push(
        `- **${item.file}:${item.line}** ${item.verdict} (engine ${item.engine ?? "none"}; query ${item.types} ${item.sort}; local SQLite ${item.localAgrees ? "agrees with the corpus" : "differs from the corpus too"}${item.approximate.length ? `; approximate item types: ${item.approximate.join(", ")}` : ""})`,
        `  - SQL: \`${cell(item.sql, 600).replace(/`/g, "'")}\``,
        `  - expected: ${cell(item.expected)}`,
        `  - got: ${cell(item.got)}`,
      );
      if (item.expected.includes("hashing")) out.push(`  - local SQLite: ${cell(item.local)}`);
    }
    out.push("");
  }
  return out.join("\n");
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const { values: options } = parseArgs({
    options: {
      corpus: { type: "string" },
      store: { type: "boolean", default: false },
      files: { type: "string", default: "select1,select2,select3,select4,select5,evidence" },
      batch: { type: "string", default: "6" },
      limit: { type: "string" },
      var: { type: "string", multiple: true },
      "report-only": { type: "boolean", default: false },
      "plan-only": { type: "boolean", default: false },
      url: { type: "string" },
    },
  });
  if (options["report-only"]) {
    writeReport();
    return;
  }
  if (!options.corpus)
    throw new Error("--corpus <dir-or-git> is required (a sqllogictest checkout or its git directory)");
  const corpus = new Corpus(options.corpus);
  const files = corpus.expand(options.files.split(",").filter(Boolean));
  const limit = options.limit ? Number(options.limit) : Infinity;
  const mode = options.store ? "store" : "sqljs";
  const vars: Record<string, string> = {
    QUERY_MAX_RUNNING_PER_USER: "8",
    QUERY_MAX_QUEUED_PER_USER: "100",
    QUERY_OVERRUN_COOLDOWN_SECONDS: "1",
    ...(options.store ? { TABLE_STORE_MIN_ROWS: "1" } : {}),
  };
  for (const pair of options.var ?? []) {
    const at = pair.indexOf("=");
    vars[pair.slice(0, at)] = pair.slice(at + 1);
  }

  const plans = files.map((file) => {
    const plan = planFile(file, corpus.read(file), limit);
    process.stderr.write(
      `planned ${file}: ${plan.queries.length} queries, ${plan.skipped} skipped, ${plan.limited} left out (--limit), ${plan.snapshots.length} snapshot(s), ` +
        `local SQLite differs from the corpus on ${plan.queries.filter((q) => !(q.local.ok && matches(q.expected, q.local.values))).length}\n`,
    );
    return plan;
  });
  if (options["plan-only"]) {
    for (const plan of plans)
      for (const query of plan.queries)
        if (!(query.local.ok && matches(query.expected, query.local.values)))
          process.stderr.write(
            `${plan.file}:${query.line} ${query.sql}\n  expected ${describeExpected(query.expected)}\n  local ${query.local.ok ? describeValues(query.local.values) : query.local.message}\n`,
          );
    return;
  }

  process.env.WRANGLER_SEND_METRICS = "false";
  process.stderr.write(`starting the local service (${mode}, ${JSON.stringify(vars)})…\n`);
  // --url: an already running service (its vars are its own), for trying the harness.
  const server = options.url
    ? { url: options.url, storeRestarts: () => 0, stop: async () => {}, output: () => "" }
    : await startWranglerDev(vars);
  const stopOnSignal = () => {
    killAllStarted();
    process.exit(130);
  };
  process.once("SIGINT", stopOnSignal);
  process.once("SIGTERM", stopOnSignal);
  try {
    const api = new Api(server.url, ACCOUNT, () => ("output" in server ? server.output() : ""));
    await api.login();
    const previous = readResults(mode);
    const results: ModeResults = {
      mode,
      vars,
      files: { ...(previous?.files ?? {}) },
      disagreements: (previous?.disagreements ?? []).filter((item) => !files.includes(item.file)),
    };
    const save = () => {
      const order = (file: string) => [...files, ...Object.keys(results.files)].indexOf(file);
      results.files = Object.fromEntries(Object.entries(results.files).sort((a, b) => order(a[0]) - order(b[0])));
      results.disagreements.sort((a, b) => order(a.file) - order(b.file) || a.line - b.line);
      results.disagreements = results.disagreements.slice(0, KEPT_DISAGREEMENTS);
      mkdirSync(RESULTS, { recursive: true });
      writeFileSync(resultsPath(mode), JSON.stringify(results, null, 1) + "\n");
    };
    for (const plan of plans) {
      try {
        const { summary, checked } = await runFile(api, plan, options.store, Number(options.batch));
        results.files[plan.file] = summary;
        results.disagreements.push(...checked.filter((item) => item.verdict !== "agree"));
      } catch (error) {
        // One file's setup failing (an upload refused) leaves the others to run.
        process.stderr.write(`[${plan.file}] failed: ${(error as Error).message}\n`);
        results.files[plan.file] = {
          ...failedSummary(plan),
          statementProblems: [`the file did not run: ${(error as Error).message}`],
        };
      }
      save();
    }
    writeReport();
    process.stderr.write(`${api.requests} requests; store restarts: ${server.storeRestarts()}\n`);
  } finally {
    await server.stop();
  }
}

function writeReport(): void {
  const results = (["sqljs", "store"] as const).map(readResults).filter((result) => result !== null);
  const text = markdown(results);
  writeFileSync(join(RESULTS, "sqllogictest.md"), text + "\n");
  process.stdout.write(text.split("\n## ")[0] + "\n");
}

if (import.meta.main)
  main().catch((error) => {
    console.error(error);
    killAllStarted();
    process.exit(1);
  });

import { ACCOUNT_NAME_RULE, DATA_NAME_RULE, isAccountName, isDataName, isDatasetName } from "../../catalog/names";
import {
  asciiLowerCase,
  isIdentifier,
  isKeyword,
  isOperator,
  significantTokens,
  tokenize,
  type IdentifierToken,
  type Token,
} from "./tokenizer";

/**
 * Finds the data items a query names (docs/api.md) and rewrites the SQL to
 * read internal tables instead.
 *
 * The rule, decided on tokens alone:
 * - Every dotted chain of exactly three identifiers (`a.b.c`, each part bare
 *   or quoted with "", `` or []) names a data item: this service exposes no
 *   schemas, so SQLite's own `schema.table.column` has no use here, and a
 *   column is referenced with at most two parts (`orders.id`).
 * - Such a chain may stand only where SQLite reads a table: after FROM, JOIN
 *   or a comma of a FROM list, or after IN (`x IN a.b.c`). Anywhere else it
 *   is reported as an error instead of being left for SQLite to misread as a
 *   column. A chain followed by `(` is left alone (SQLite has no three-part
 *   function names and reports it), and a chain of four or more parts is an
 *   error.
 * - In a table position only, a single backtick-quoted identifier with at
 *   least two dots is the whole name in one: `` `a.b.orders.csv` `` splits at
 *   the first two dots. Elsewhere such an identifier is a column name.
 * - A two-part name in a FROM list, or a name glued to '-' or a digit-led
 *   part (`a.b.my-data`, which SQLite reads as a subtraction), is an error
 *   that says how to write the name.
 * - Each distinct data item becomes one internal table `"t0"`, `"t1"`, …
 *   (a name the query does not already use). A reference in a FROM list
 *   without an alias becomes `"t0" AS "orders"` when the query qualifies a
 *   column with that name anywhere (`orders.id`), so it keeps working as the
 *   user wrote it; otherwise it stays `"t0"`, so that two items with the
 *   same data name from different datasets do not collide in `SELECT *`.
 * Strings and comments are separate tokens and are never rewritten; a
 * comment between the parts of a name goes away with the name.
 */

/** One distinct data item the query reads, and the internal table name the rewritten SQL uses for it. */
export interface DataItemReference {
  account: string;
  dataset: string;
  data: string;
  /** The internal table name, e.g. `t0` (quoted as `"t0"` in the rewritten SQL). */
  alias: string;
}

export type TableNamesResult = { ok: true; sql: string; tables: DataItemReference[] } | { ok: false; message: string };

/** Which columns of a table a query may read: all of them, or those named in the set. */
export type ColumnSelection = "all" | ReadonlySet<string>;

type Position = "from" | "in" | null;

// Keywords that may follow a table in a FROM list without being its alias.
const NOT_AN_ALIAS = words(`JOIN LEFT RIGHT FULL INNER OUTER CROSS NATURAL ON USING INDEXED NOT
  WHERE GROUP HAVING WINDOW ORDER LIMIT UNION INTERSECT EXCEPT RETURNING`);
// Keywords that end a FROM list at the current parenthesis depth.
const FROM_LIST_END = words(`WHERE GROUP HAVING WINDOW ORDER LIMIT UNION INTERSECT EXCEPT RETURNING
  SELECT VALUES SET`);

function words(text: string): string[] {
  return text.trim().split(/\s+/);
}

/** Replaces every data item name in `sql` with its internal table name, or says which name is wrong and why. */
export function rewriteTableNames(sql: string): TableNamesResult {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) return { ok: false, message: tokenized.message };
  const tokens = significantTokens(tokenized.tokens);
  const positions = tablePositions(tokens);
  const internalNames = internalNameSource(tokens);
  const qualifiers = qualifierNames(tokens);
  const tables = new Map<string, DataItemReference>();
  const edits: { start: number; end: number; text: string }[] = [];

  const use = (first: Token, last: Token, parts: [string, string, string], position: Position, next: number) => {
    const problem = nameProblem(parts, sql.slice(first.start, last.end));
    if (problem) return problem;
    const [account, dataset, data] = parts;
    const key = JSON.stringify(parts);
    let table = tables.get(key);
    if (!table) {
      table = { account, dataset, data, alias: internalNames() };
      tables.set(key, table);
    }
    const needsAlias = position === "from" && !isAlias(tokens[next]) && qualifiers.has(asciiLowerCase(data));
    edits.push({
      start: first.start,
      end: last.end,
      text: quoteIdentifier(table.alias) + (needsAlias ? ` AS ${quoteIdentifier(data)}` : ""),
    });
    return null;
  };

  for (let k = 0; k < tokens.length; k++) {
    const first = tokens[k];
    if (!isIdentifier(first) || isOperator(tokens[k - 1], ".")) continue;
    const position = positions[k]!;
    const chain = [first];
    for (;;) {
      const part = tokens[k + 2];
      if (!isOperator(tokens[k + 1], ".") || !isIdentifier(part)) break;
      chain.push(part);
      k += 2;
    }
    const last = chain.at(-1)!;
    const next = k + 1;
    const text = sql.slice(first.start, last.end);

    if (position !== null && !isOperator(tokens[next], "(")) {
      // A name that reads as more parts than three, or as a subtraction, is most often a data name with '.' or '-'.
      const glued = gluedRun(tokens, next, last.end);
      if (glued.end > last.end || chain.length >= 4) {
        const whole = sql.slice(first.start, glued.end);
        const message = mustBeQuoted(whole, nameParts(chain, tokens.slice(next, glued.next)));
        if (message) return { ok: false, message };
      }
    }
    if (chain.length >= 4 || (chain.length === 3 && isOperator(tokens[next], "."))) {
      const written = chain.map((part) => part.text);
      if (chain.length === 3) written.push(tokens[next + 1]?.text ?? "");
      return { ok: false, message: tooManyParts(written) };
    }
    if (isOperator(tokens[next], "(")) continue;
    let parts: [string, string, string] | null = null;
    if (chain.length === 3) {
      if (position === null) {
        return {
          ok: false,
          message:
            `"${text}" is used where a column is expected. A three-part name (Account.Dataset.Data) names a ` +
            `data item and belongs after FROM or JOIN; a column is named with at most two parts (table.column)`,
        };
      }
      parts = [chain[0]!.value, chain[1]!.value, last.value];
    } else if (chain.length === 2 && position === "from") {
      return { ok: false, message: `"${text}" has two parts; a data item is named with three: Account.Dataset.Data` };
    } else if (chain.length === 1 && position !== null && first.quote === "`") {
      parts = splitWholeName(first.value);
    }
    if (parts) {
      const problem = use(first, last, parts, position, next);
      if (problem) return { ok: false, message: problem };
    }
  }

  let rewritten = "";
  let at = 0;
  for (const edit of edits) {
    rewritten += sql.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  rewritten += sql.slice(at);
  return { ok: true, sql: rewritten, tables: [...tables.values()] };
}

/**
 * For each significant token, whether it starts a table reference: "from"
 * right after FROM, JOIN, a comma of a FROM list or the `(` of a
 * parenthesised join; "in" right after IN. A FROM list lasts, at its own
 * parenthesis depth, until a keyword that starts the next clause.
 */
function tablePositions(tokens: readonly Token[]): Position[] {
  const positions: Position[] = [];
  const inFromList: boolean[] = [false];
  const isFromKeyword = (k: number) => isKeyword(tokens[k], "FROM") && !isKeyword(tokens[k - 1], "DISTINCT");
  for (let k = 0; k < tokens.length; k++) {
    const token = tokens[k]!;
    const prev = tokens[k - 1];
    const listOpen = inFromList.at(-1)!;
    let position: Position = null;
    if (isFromKeyword(k - 1) || isKeyword(prev, "JOIN")) position = "from";
    else if (listOpen && (isOperator(prev, ",") || isOperator(prev, "("))) position = "from";
    else if (isKeyword(prev, "IN")) position = "in";
    positions.push(position);

    if (isOperator(token, "(")) {
      inFromList.push(position === "from" && !isKeyword(tokens[k + 1], "SELECT", "WITH", "VALUES"));
    } else if (isOperator(token, ")")) {
      if (inFromList.length > 1) inFromList.pop();
    } else if (token.kind === "semicolon") {
      inFromList.splice(0, inFromList.length, false);
    } else if (isFromKeyword(k)) {
      inFromList[inFromList.length - 1] = true;
    } else if (isKeyword(token, ...FROM_LIST_END)) {
      inFromList[inFromList.length - 1] = false;
    }
  }
  return positions;
}

/**
 * The text glued to a name (no space between): '-', '.', numbers, then words
 * and, after a '.', quoted parts run on as one name to a reader. Returns
 * where it ends and the index of the first token past it.
 */
function gluedRun(tokens: readonly Token[], from: number, end: number): { end: number; next: number } {
  let k = from;
  for (; k < tokens.length; k++) {
    const token = tokens[k]!;
    // A word right after the name is an alias (`FROM "t"x` is valid), not part of the name.
    const word = token.kind === "identifier" && k > from && (token.quote === "none" || isOperator(tokens[k - 1], "."));
    const glues =
      token.start === end && (word || token.kind === "number" || isOperator(token, "-") || isOperator(token, "."));
    if (!glues) break;
    end = token.end;
  }
  return { end, next: k };
}

/**
 * The parts a reader sees in a name written with '-' or too many dots: split
 * at every dot outside quotes; account and dataset names hold no '.', so
 * everything after the second part is the data name. Null for fewer than three.
 */
function nameParts(chain: readonly IdentifierToken[], glued: readonly Token[]): [string, string, string] | null {
  const parts = chain.map((part) => part.value);
  for (const token of glued) {
    if (token.kind === "identifier" && token.quote !== "none") {
      parts[parts.length - 1] += token.value;
      continue;
    }
    // A number glued after a dot (`.2025`) is one token: its dots split as well.
    token.text.split(".").forEach((piece, i) => {
      if (i > 0) parts.push("");
      parts[parts.length - 1] += piece;
    });
  }
  if (parts.length < 3) return null;
  return [parts[0]!, parts[1]!, parts.slice(2).join(".")];
}

/**
 * Says how to write a name that needs quotes, as a name that runs as written
 * (or how names are written, when it has fewer than three parts); null when
 * its parts are not valid names, for the checks after to say why.
 */
function mustBeQuoted(whole: string, parts: [string, string, string] | null): string | null {
  if (!parts) return `"${whole}" must be quoted, and has fewer than three parts. ${HOW_ITEMS_ARE_NAMED}`;
  if (nameProblem(parts, whole)) return null;
  return (
    `"${whole}" must be quoted: a name part that holds '-' or '.', or starts with a digit, ` +
    `is written in backticks: ${writtenName(...parts)}`
  );
}

export const HOW_ITEMS_ARE_NAMED =
  "A data item is named account.dataset.item, with a part that holds a dot or a dash in backticks (alice.sales.`orders.csv`).";

/** A data item's name as a query writes it: each part bare where SQLite reads it so, else in backticks. */
export function writtenName(account: string, dataset: string, data: string): string {
  return [account, dataset, data]
    .map((part) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(part) ? part : `\`${part.replaceAll("`", "``")}\``))
    .join(".");
}

/** `Account.Dataset.Data` written as one identifier: account and dataset names hold no '.', so the rest is the data name. */
function splitWholeName(value: string): [string, string, string] | null {
  const first = value.indexOf(".");
  const second = value.indexOf(".", first + 1);
  if (first === -1 || second === -1) return null;
  return [value.slice(0, first), value.slice(first + 1, second), value.slice(second + 1)];
}

function nameProblem([account, dataset, data]: [string, string, string], text: string): string | null {
  if (!isAccountName(account)) {
    return `Invalid account name "${account}" in ${text}: an account name is ${ACCOUNT_NAME_RULE}`;
  }
  if (!isDatasetName(dataset)) {
    return `Invalid dataset name "${dataset}" in ${text}: a dataset name is ${ACCOUNT_NAME_RULE}`;
  }
  if (!isDataName(data)) return `Invalid data name "${data}" in ${text}: a data name is ${DATA_NAME_RULE}`;
  return null;
}

function tooManyParts(parts: string[]): string {
  const column = parts.at(-1) ?? "column";
  return (
    `"${parts.join(".")}" has more than three parts. A data item is named Account.Dataset.Data, and a column ` +
    `with at most two parts: the data name (or the alias given in FROM) and the column, e.g. ${parts[2]}.${column}`
  );
}

/** True when the token after a table in a FROM list is an alias (with or without AS). */
function isAlias(token: Token | undefined): boolean {
  if (token === undefined) return false;
  if (isKeyword(token, "AS") || token.kind === "string") return true;
  if (token.kind !== "identifier") return false;
  return token.quote !== "none" || !isKeyword(token, ...NOT_AN_ALIAS);
}

/** Names that qualify something (`x` in `x.col`, `x.*`), in lower case: the names the query needs tables to have. */
function qualifierNames(tokens: readonly Token[]): Set<string> {
  const names = new Set<string>();
  tokens.forEach((token, k) => {
    if ((token.kind === "identifier" || token.kind === "string") && isOperator(tokens[k + 1], ".")) {
      names.add(asciiLowerCase(token.value));
    }
  });
  return names;
}

/** Internal names t0, t1, … skipping any name the query already uses (SQLite compares names case-insensitively). */
function internalNameSource(tokens: readonly Token[]): () => string {
  const used = new Set<string>();
  for (const token of tokens) {
    if (token.kind === "identifier" || token.kind === "string") used.add(asciiLowerCase(token.value));
  }
  let counter = 0;
  return () => {
    while (used.has(`t${counter}`)) counter++;
    return `t${counter++}`;
  };
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Which columns of each table the query may read, so a loader can skip the
 * rest. Conservative: "all" when the query can reach columns it does not
 * name — a star in a select list (`*`, `t.*`), NATURAL JOIN, USING, or
 * `x IN table` (which reads the table's only column); otherwise the columns
 * whose names appear, compared as SQLite does, as an identifier or string
 * anywhere in the query. An empty set means no column is read, only rows
 * (`SELECT count(*) FROM t`). `tableColumns` maps each table name to its
 * column names; the tokens may be those of the original or rewritten SQL.
 */
export function columnsUsed(
  tokens: readonly Token[],
  tableColumns: ReadonlyMap<string, readonly string[]>,
): Map<string, ColumnSelection> {
  const significant = significantTokens(tokens);
  const readsUnnamedColumns = significant.some((token, k) => {
    const prev = significant[k - 1];
    if (isOperator(token, "*")) {
      return (
        isKeyword(prev, "SELECT", "DISTINCT", "ALL", "RETURNING") || isOperator(prev, ",") || isOperator(prev, ".")
      );
    }
    if (isKeyword(token, "IN")) return significant[k + 1] !== undefined && !isOperator(significant[k + 1], "(");
    return isKeyword(token, "NATURAL", "USING");
  });
  const named = new Set<string>();
  for (const token of significant) {
    if (token.kind === "identifier" || token.kind === "string") named.add(asciiLowerCase(token.value));
  }
  const result = new Map<string, ColumnSelection>();
  for (const [table, columns] of tableColumns) {
    result.set(
      table,
      readsUnnamedColumns ? "all" : new Set(columns.filter((column) => named.has(asciiLowerCase(column)))),
    );
  }
  return result;
}

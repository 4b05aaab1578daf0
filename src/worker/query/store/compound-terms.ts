import type { Database } from "sql.js";
import { Stop } from "../run-limits";
import { asciiLowerCase, isKeyword, isOperator, isTrivia, tokenize, type Token } from "../sql/tokenizer";

/** A Durable Object's SQLite allows at most this many terms in one compound SELECT (sql.js: 500). */
export const STORE_MAX_COMPOUND_TERMS = 5;

/**
 * Tells whether two statements compile to the same program; nestCompounds
 * uses it to learn which result column an ORDER BY term names.
 */
export type SameProgram = (sql: string, variant: string) => boolean;

export type NestedCompounds = { ok: true; sql: string } | { ok: false; message: string };

/**
 * `sql` with every compound SELECT of more than STORE_MAX_COMPOUND_TERMS
 * terms (anywhere: at the top, in a subquery, in a common table expression)
 * nested from the left, which keeps SQL's left-to-right meaning:
 * `a OP1 b … OP5 f` becomes `SELECT * FROM (a OP1 b … e) OP5 f`. A trailing
 * ORDER BY / LIMIT stays outermost, each ORDER BY term written as the column
 * number SQLite resolves it to (found with `sameProgram`), since the nested
 * terms' names and expressions are no longer in reach. Shapes it cannot
 * nest with certainty fail with a message naming the store's limit.
 */
export function nestCompounds(sql: string, sameProgram: SameProgram | null): NestedCompounds {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) return { ok: true, sql };
  try {
    return { ok: true, sql: new Nester(sql, tokenized.tokens, sameProgram).statement() };
  } catch (error) {
    if (error instanceof CannotNest) return { ok: false, message: error.message };
    throw error;
  }
}

/**
 * The statement as a table store can run it (nestCompounds, checked to
 * compile in sql.js to as many columns), or a Stop naming the store's limit.
 */
export function compoundsForStore(db: Database, sql: string): string {
  const nested = nestCompounds(sql, sameProgramIn(db));
  if (!nested.ok) throw new Stop(nested.message);
  if (nested.sql === sql) return sql;
  const columns = columnCount(db, nested.sql);
  if (columns === null || columns !== columnCount(db, sql))
    throw new Stop(
      `Failed: a compound SELECT in a table store may have at most ${STORE_MAX_COMPOUND_TERMS} terms (UNION, UNION ALL, INTERSECT, EXCEPT: a Durable Object's limit), and the store could not split this query's into nested ones. Nest them yourself: SELECT * FROM (its first terms) UNION ….`,
    );
  return nested.sql;
}

function columnCount(db: Database, sql: string): number | null {
  try {
    const statement = db.prepare(sql);
    try {
      return statement.getColumnNames().length;
    } finally {
      statement.free();
    }
  } catch {
    return null;
  }
}

/**
 * Compares programs with sql.js's EXPLAIN on the database the query was
 * checked on: SQLite turns a compound's ORDER BY term into the number of
 * the column it matches, so the term and that number compile alike.
 */
export function sameProgramIn(db: Database): SameProgram {
  const programs = new Map<string, string | null>();
  const program = (text: string): string | null => {
    let known = programs.get(text);
    if (known !== undefined) return known;
    try {
      const statement = db.prepare(`EXPLAIN ${text}`);
      try {
        const rows: unknown[] = [];
        while (statement.step()) rows.push(statement.get());
        known = JSON.stringify(rows);
      } finally {
        statement.free();
      }
    } catch {
      known = null;
    }
    programs.set(text, known);
    return known;
  };
  return (text, variant) => {
    const original = program(text);
    return original !== null && original === program(variant);
  };
}

class CannotNest extends Error {}

function tooManyTerms(terms: number, why: string): CannotNest {
  return new CannotNest(
    `Failed: a compound SELECT in a table store may have at most ${STORE_MAX_COMPOUND_TERMS} terms (UNION, UNION ALL, INTERSECT, EXCEPT: a Durable Object's limit); this one has ${terms}, and the store could not split it into nested ones because ${why}`,
  );
}

/** One compound's parts, as token indexes: where each term starts and where each operator starts. */
interface Compound {
  termStarts: number[];
  opStarts: number[];
  /** Where the compound's own ORDER BY or LIMIT starts (or its end). */
  tailStart: number;
}

class Nester {
  /** For each `(` and `)` token, the index of its partner. */
  private readonly partner = new Map<number, number>();
  /** Whether a COLLATE may give a result column a collation, which nesting could apply differently. */
  private readonly collatesColumns: boolean;

  constructor(
    private readonly sql: string,
    private readonly tokens: readonly Token[],
    private readonly sameProgram: SameProgram | null,
  ) {
    const open: number[] = [];
    tokens.forEach((token, i) => {
      if (isOperator(token, "(")) open.push(i);
      else if (isOperator(token, ")") && open.length > 0) {
        const start = open.pop()!;
        this.partner.set(start, i);
        this.partner.set(i, start);
      }
    });
    this.collatesColumns = tokens.some((token, i) => isKeyword(token, "COLLATE") && this.inResultColumns(i));
  }

  /** The whole statement, up to its first `;` at the top, then the rest as written. */
  statement(): string {
    let end = this.tokens.length;
    for (let i = 0; i < this.tokens.length; i = this.skipGroup(i) + 1)
      if (this.tokens[i]!.kind === "semicolon") {
        end = i;
        break;
      }
    const first = this.nextSignificant(0, end);
    const body = first !== end && isSelectStart(this.tokens[first]) ? this.select(0, end, null) : this.text(0, end);
    return body + this.sql.slice(this.tokens[end]?.start ?? this.sql.length);
  }

  /** Tokens [from, to) as written, with each SELECT inside parentheses done by `select`. */
  private text(from: number, to: number): string {
    let out = "";
    for (let i = from; i < to; i++) {
      const token = this.tokens[i]!;
      const close = this.partner.get(i);
      if (isOperator(token, "(") && close !== undefined && close < to) {
        const first = this.nextSignificant(i + 1, close);
        if (first !== close && isSelectStart(this.tokens[first])) {
          out += token.text + this.select(i + 1, close, this.cteName(i)) + this.tokens[close]!.text;
          i = close;
          continue;
        }
      }
      out += token.text;
    }
    return out;
  }

  /** A SELECT (or VALUES, or WITH … SELECT) spanning tokens [from, to), its compound nested when too long. */
  private select(from: number, to: number, cte: string | null): string {
    const compound = this.compound(from, to);
    const terms = compound?.termStarts.length ?? 0;
    if (!compound || terms <= STORE_MAX_COMPOUND_TERMS) return this.text(from, to);
    const { termStarts, opStarts, tailStart } = compound;
    if (this.collatesColumns)
      throw tooManyTerms(
        terms,
        "the query gives a result column a collation (COLLATE in a SELECT's columns or in VALUES), which could then apply differently. Nest the compound yourself (SELECT * FROM (its first terms) UNION …), or move COLLATE to the WHERE or ORDER BY.",
      );
    // A leading WITH stays outside: its tables are in reach of the subqueries.
    const prefix = this.text(from, termStarts[0]!);
    let out = this.text(termStarts[0]!, opStarts[0]!);
    let inLevel = 1;
    for (let k = 1; k < terms; k++) {
      if (inLevel === STORE_MAX_COMPOUND_TERMS) {
        out = `SELECT * FROM (${out}) `;
        inLevel = 1;
        this.refuseRecursion(cte, termStarts[0]!, opStarts[k - 1]!, terms);
      }
      out += this.text(opStarts[k - 1]!, termStarts[k]!) + this.text(termStarts[k]!, opStarts[k] ?? tailStart);
      inLevel++;
    }
    return prefix + out + this.tail(tailStart, to, terms);
  }

  /** The compound's ORDER BY and LIMIT, each ORDER BY term written as its column number. */
  private tail(from: number, to: number, terms: number): string {
    const first = this.nextSignificant(from, to);
    if (first === to || !isKeyword(this.tokens[first], "ORDER")) return this.text(from, to);
    const by = this.nextSignificant(first + 1, to);
    let out = this.text(from, by + 1);
    let at = by + 1;
    for (;;) {
      const start = this.nextSignificant(at, to);
      let end = start;
      for (let i = start; i < to; i = this.skipGroup(i) + 1) {
        const token = this.tokens[i]!;
        if (isOperator(token, ",") || isKeyword(token, "LIMIT")) break;
        if (!isTrivia(token)) end = this.skipGroup(i) + 1;
      }
      const expressionEnd = this.withoutOrdering(start, end);
      out += this.text(at, start) + this.columnNumber(start, expressionEnd, terms) + this.text(expressionEnd, end);
      at = end;
      const next = this.nextSignificant(end, to);
      if (next === to || !isOperator(this.tokens[next], ",")) break;
      out += this.text(end, next + 1);
      at = next + 1;
    }
    return out + this.text(at, to);
  }

  /** The column number an ORDER BY term's expression [from, to) resolves to, as SQLite compiles it. */
  private columnNumber(from: number, to: number, terms: number): string {
    const written = this.sql.slice(this.tokens[from]!.start, this.tokens[to - 1]!.end);
    if (this.nextSignificant(from, to) === to - 1 && /^[0-9]+$/.test(written)) return written;
    const before = this.sql.slice(0, this.tokens[from]!.start);
    const after = this.sql.slice(this.tokens[to - 1]!.end);
    if (this.sameProgram)
      for (let column = 1; column <= 2000; column++) {
        const variant = `${before}${column}${after}`;
        if (this.sameProgram(this.sql, variant)) return String(column);
        // Past the last column the variant no longer compiles: no column matched.
        if (!this.sameProgram(variant, variant)) break;
      }
    throw tooManyTerms(
      terms,
      `it could not tell which result column ORDER BY ${written} names. Order by column number (ORDER BY 2) instead.`,
    );
  }

  /** The end of an ORDER BY term [from, to) without its ASC / DESC and NULLS FIRST / LAST. */
  private withoutOrdering(from: number, to: number): number {
    const previous = (i: number) => this.previousSignificant(i, from);
    let last = previous(to);
    if (isKeyword(this.tokens[last], "FIRST", "LAST") && isKeyword(this.tokens[previous(last)], "NULLS"))
      last = previous(previous(last));
    if (isKeyword(this.tokens[last], "ASC", "DESC")) last = previous(last);
    // SQLite keeps a term's COLLATE when it turns the term into a number, so it stays as written.
    if (isKeyword(this.tokens[previous(last)], "COLLATE")) last = previous(previous(last));
    return last + 1;
  }

  /** A recursive common table expression's own name may not move into a subquery (SQLite refuses it there). */
  private refuseRecursion(cte: string | null, from: number, to: number, terms: number): void {
    if (cte === null) return;
    for (let i = from; i < to; i++) {
      const token = this.tokens[i]!;
      if (token.kind === "identifier" && asciiLowerCase(token.value) === cte)
        throw tooManyTerms(
          terms,
          `the recursive SELECT on ${token.text} would move into a subquery. Put at most ${STORE_MAX_COMPOUND_TERMS - 1} recursive SELECTs last, or use fewer terms.`,
        );
    }
  }

  /**
   * The parts of the compound SELECT spanning [from, to), past a leading
   * WITH clause; null when the tokens do not read as one.
   */
  private compound(from: number, to: number): Compound | null {
    let i = this.nextSignificant(from, to);
    if (isKeyword(this.tokens[i], "WITH")) {
      i = this.nextSignificant(i + 1, to);
      if (isKeyword(this.tokens[i], "RECURSIVE")) i = this.nextSignificant(i + 1, to);
      for (;;) {
        i = this.nextSignificant(i + 1, to); // past the name
        if (isOperator(this.tokens[i], "(")) i = this.nextSignificant(this.skipGroup(i) + 1, to);
        if (!isKeyword(this.tokens[i], "AS")) return null;
        i = this.nextSignificant(i + 1, to);
        if (isKeyword(this.tokens[i], "NOT")) i = this.nextSignificant(i + 1, to);
        if (isKeyword(this.tokens[i], "MATERIALIZED")) i = this.nextSignificant(i + 1, to);
        if (!isOperator(this.tokens[i], "(")) return null;
        i = this.nextSignificant(this.skipGroup(i) + 1, to);
        if (!isOperator(this.tokens[i], ",")) break;
        i = this.nextSignificant(i + 1, to);
      }
    }
    if (i >= to || !isKeyword(this.tokens[i], "SELECT", "VALUES")) return null;
    const compound: Compound = { termStarts: [i], opStarts: [], tailStart: to };
    for (let at = i; at < to; at = this.skipGroup(at) + 1) {
      const token = this.tokens[at]!;
      if (isKeyword(token, "UNION", "INTERSECT", "EXCEPT")) {
        let next = this.nextSignificant(at + 1, to);
        if (isKeyword(token, "UNION") && isKeyword(this.tokens[next], "ALL")) next = this.nextSignificant(next + 1, to);
        compound.opStarts.push(at);
        compound.termStarts.push(next);
        at = next - 1;
      } else if (isKeyword(token, "ORDER", "LIMIT")) {
        compound.tailStart = at;
        break;
      }
    }
    return compound;
  }

  /**
   * Whether the token at `at` is in a SELECT's result columns or a VALUES
   * row: the nearest clause keyword before it, leaving parentheses that are
   * not a subquery, is SELECT or VALUES. Elsewhere (WHERE, ORDER BY, …) a
   * collation does not pass on to the result.
   */
  private inResultColumns(at: number): boolean {
    for (let i = at - 1; i >= 0; i--) {
      const token = this.tokens[i]!;
      if (isOperator(token, ")")) i = this.partner.get(i) ?? i;
      else if (isOperator(token, "(")) {
        if (isSelectStart(this.tokens[this.nextSignificant(i + 1, this.tokens.length)])) return true;
      } else if (isKeyword(token, "SELECT", "VALUES")) return true;
      else if (isKeyword(token, ...CLAUSES)) return false;
    }
    return false;
  }

  /** The name of the common table expression whose body starts after the `(` at `open`, or null. */
  private cteName(open: number): string | null {
    let i = this.previousSignificant(open, 0);
    if (isKeyword(this.tokens[i], "MATERIALIZED")) i = this.previousSignificant(i, 0);
    if (isKeyword(this.tokens[i], "NOT")) i = this.previousSignificant(i, 0);
    if (!isKeyword(this.tokens[i], "AS")) return null;
    i = this.previousSignificant(i, 0);
    if (isOperator(this.tokens[i], ")")) i = this.previousSignificant(this.partner.get(i) ?? 0, 0);
    const name = this.tokens[i];
    return name?.kind === "identifier" ? asciiLowerCase(name.value) : null;
  }

  /** The index of the `)` closing the `(` at `i`, or `i` itself for any other token. */
  private skipGroup(i: number): number {
    return isOperator(this.tokens[i], "(") ? (this.partner.get(i) ?? i) : i;
  }

  private nextSignificant(from: number, to: number): number {
    let i = from;
    while (i < to && isTrivia(this.tokens[i]!)) i++;
    return i;
  }

  /** The last significant token before `before`, not before `floor` (or `floor` itself when there is none). */
  private previousSignificant(before: number, floor: number): number {
    let i = before - 1;
    while (i > floor && isTrivia(this.tokens[i]!)) i--;
    return Math.max(i, floor);
  }
}

/** Keywords that start a part of a SELECT other than its result columns. */
const CLAUSES = [
  "FROM",
  "WHERE",
  "GROUP",
  "HAVING",
  "WINDOW",
  "ORDER",
  "PARTITION",
  "LIMIT",
  "ON",
  "USING",
  "JOIN",
  "UNION",
  "INTERSECT",
  "EXCEPT",
  "WITH",
];

function isSelectStart(token: Token | undefined): boolean {
  return isKeyword(token, "SELECT", "VALUES", "WITH");
}

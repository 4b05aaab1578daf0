import { tokenize, type Token } from "./tokenizer";

/** One value of `SqlRequest.Parameters`, as JSON carries it. */
export type ParameterValue = string | number | boolean | null;

/** `SqlRequest.Parameters`: an object binds `:name`, `@name`, `$name` (keys without the sigil); an array binds `?`, `?NNN`. */
export type Parameters = { [name: string]: ParameterValue } | ParameterValue[];

/** The most values one query binds: a table store's SQL storage binds at most 100 per statement. */
export const MAX_PARAMETERS = 100;

/** A value as both engines hand it to SQLite (INTEGER values travel as decimal text; see bindParameters). */
export type BoundValue = string | number | null;

export type BoundSql = { ok: true; sql: string; values: BoundValue[] } | { ok: false; message: string };

/** How one placeholder is bound: the position it gets in the rewritten SQL (1-based) and the value's SQLite type. */
interface Binding {
  position: number;
  value: ParameterValue;
}

type Plan = { ok: true; bindings: Map<Token, Binding>; values: ParameterValue[] } | { ok: false; message: string };

/**
 * The query with every placeholder written `?K` and the values in the order
 * of K, so that both engines bind by position: sql.js, and a Durable
 * Object's SQL storage, which binds only by position. Neither binds a 64-bit
 * integer (sql.js binds a number beyond 32 bits as REAL, the Durable Object
 * every number), so an INTEGER value is bound as its decimal text and its
 * placeholder becomes `(+CAST(?K AS INTEGER))`: SQLite still takes the value
 * from the binding, never from the text, and the unary `+` leaves the
 * expression without affinity, as a bare placeholder is. Column names are
 * not taken from this text (the engines name result columns from the query
 * as written).
 */
export function bindParameters(tokens: readonly Token[], parameters: Parameters | null): BoundSql {
  const plan = planBindings(tokens, parameters);
  if (!plan.ok) return plan;
  const sql = rewrite(tokens, plan.bindings, ({ position, value }) =>
    sqliteType(value) === "INTEGER" ? `(+CAST(?${position} AS INTEGER))` : `?${position}`,
  );
  return { ok: true, sql, values: plan.values.map(boundValue) };
}

/**
 * The query with every placeholder replaced by a NULL of its value's type
 * (`CAST(NULL AS INTEGER)`, …), for SQLite to type result columns without
 * values: a view, which is how SQLite reports column types, may hold no
 * placeholder.
 */
export function withTypedNulls(tokens: readonly Token[], parameters: Parameters | null): BoundSql {
  const plan = planBindings(tokens, parameters);
  if (!plan.ok) return plan;
  const sql = rewrite(tokens, plan.bindings, ({ value }) => {
    const type = sqliteType(value);
    return type === "NULL" ? "(NULL)" : `(CAST(NULL AS ${type}))`;
  });
  return { ok: true, sql, values: [] };
}

/**
 * Why `POST /v1/query` refuses these Parameters for this SQL (400), naming
 * the placeholder, or null. SQL the tokenizer cannot read is left to the
 * query, which fails with the tokenizer's message (docs/api.md).
 */
export function parameterProblem(sql: string, parameters: Parameters | null): string | null {
  const tokenized = tokenize(sql);
  if (!tokenized.ok) return null;
  const plan = planBindings(tokenized.tokens, parameters);
  return plan.ok ? null : plan.message;
}

/** A stable text of the parameters (object keys sorted; none, `{}` and `[]` alike), to tell two submits apart. */
export function canonicalParameters(parameters: Parameters | null | undefined): string {
  if (!parameters) return "null";
  if (Array.isArray(parameters)) return parameters.length === 0 ? "null" : JSON.stringify(parameters);
  const keys = Object.keys(parameters).sort();
  if (keys.length === 0) return "null";
  return JSON.stringify(Object.fromEntries(keys.map((key) => [key, parameters[key]])));
}

/** The SQLite type a JSON value binds as (docs/api.md); a string of digits stays TEXT. */
function sqliteType(value: ParameterValue): "INTEGER" | "REAL" | "TEXT" | "NULL" {
  if (value === null) return "NULL";
  if (typeof value === "string") return "TEXT";
  if (typeof value === "boolean" || Number.isSafeInteger(value)) return "INTEGER";
  return "REAL";
}

function boundValue(value: ParameterValue): BoundValue {
  if (typeof value === "boolean") return value ? "1" : "0";
  // -0 is the integer 0.
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value === 0 ? 0 : value);
  return value;
}

/** The SQL text with each placeholder token replaced by `render` of its binding. */
function rewrite(
  tokens: readonly Token[],
  bindings: Map<Token, Binding>,
  render: (binding: Binding) => string,
): string {
  let out = "";
  for (const [i, token] of tokens.entries()) {
    const binding = bindings.get(token);
    if (!binding) {
      out += token.text;
      continue;
    }
    out += render(binding);
    // `$a(x)` may be followed by a digit, which would run on into `?K`.
    if (/^[0-9]/.test(tokens[i + 1]?.text ?? "")) out += " ";
  }
  return out;
}

/** Matches placeholders with values: every placeholder has one, every value a placeholder, one kind only. */
function planBindings(tokens: readonly Token[], parameters: Parameters | null): Plan {
  const placeholders = tokens.filter((token) => token.kind === "parameter");
  const named = placeholders.filter((token) => !token.text.startsWith("?"));
  const positional = placeholders.filter((token) => token.text.startsWith("?"));
  if (named.length > 0 && positional.length > 0)
    return refuse(
      `Sql mixes named placeholders (${named[0]!.text}) with positional ones (${positional[0]!.text}); use one kind.`,
    );
  if (parameters === null) {
    if (placeholders.length === 0) return { ok: true, bindings: new Map(), values: [] };
    return refuse(`The placeholder ${placeholders[0]!.text} has no value: the request has no Parameters.`);
  }
  return Array.isArray(parameters) ? byPosition(positional, named, parameters) : byName(named, positional, parameters);
}

function byPosition(positional: Token[], named: Token[], values: ParameterValue[]): Plan {
  if (named.length > 0)
    return refuse(
      `Sql has the named placeholder ${named[0]!.text}, but Parameters is an array, which binds ? and ?NNN; send an object keyed by name (without ${named[0]!.text[0]}).`,
    );
  if (values.length > MAX_PARAMETERS)
    return refuse(`Parameters has ${values.length} values; a query binds at most ${MAX_PARAMETERS}.`);
  const bindings = new Map<Token, Binding>();
  const used = new Set<number>();
  // SQLite's numbering: `?` takes one more than the highest number so far, `?NNN` takes NNN.
  let highest = 0;
  for (const token of positional) {
    const position = token.text === "?" ? highest + 1 : Number(token.text.slice(1));
    if (position < 1 || position > values.length)
      return refuse(
        `The placeholder ${token.text}${token.text === "?" ? ` (number ${position})` : ""} has no value: Parameters has ${values.length} value${values.length === 1 ? "" : "s"}.`,
      );
    highest = Math.max(highest, position);
    used.add(position);
    bindings.set(token, { position, value: values[position - 1] ?? null });
  }
  for (let position = 1; position <= values.length; position++)
    if (!used.has(position))
      return refuse(
        `Parameters has a value at position ${position} (?${position}), but Sql has no placeholder for it; remove the value or use it.`,
      );
  return { ok: true, bindings, values };
}

function byName(named: Token[], positional: Token[], parameters: { [name: string]: ParameterValue }): Plan {
  if (positional.length > 0)
    return refuse(
      `Sql has the positional placeholder ${positional[0]!.text}, but Parameters is an object, which binds :name, @name and $name; send an array.`,
    );
  const bindings = new Map<Token, Binding>();
  // Keys in the order Sql first uses them; `:a` and `$a` are one parameter, keyed "a".
  const positions = new Map<string, number>();
  for (const token of named) {
    const key = token.text.slice(1);
    if (!Object.hasOwn(parameters, key))
      return refuse(`The placeholder ${token.text} has no value: add "${key}" to Parameters.`);
    let position = positions.get(key);
    if (position === undefined) positions.set(key, (position = positions.size + 1));
    bindings.set(token, { position, value: parameters[key] ?? null });
  }
  for (const key of Object.keys(parameters))
    if (!positions.has(key))
      return refuse(
        `Parameters has "${key}", but Sql has no placeholder :${key}, @${key} or $${key}; remove it or use it.`,
      );
  if (positions.size > MAX_PARAMETERS)
    return refuse(`Parameters has ${positions.size} values; a query binds at most ${MAX_PARAMETERS}.`);
  return { ok: true, bindings, values: [...positions.keys()].map((key) => parameters[key] ?? null) };
}

function refuse(message: string): Plan {
  return { ok: false, message };
}

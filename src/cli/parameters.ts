import type { QueryParameters } from "../sdk";
import { UsageError } from "./context";

type Value = string | number | boolean | null;

/** `NAME=VALUE`: a name as placeholders are written (letters, digits, _ and $), then `=`. */
const NAMED = /^([A-Za-z_][\w$]*)=([\s\S]*)$/;

/** Collects repeated `--param` options (commander's argParser). */
export function collectParam(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * The Parameters of `--param` options: all `NAME=VALUE` make an object (for
 * :NAME, @NAME, $NAME), all bare `VALUE` an array (for ?, ?NNN, in order).
 * A positional value holding `=` after a name-like start is written as a
 * JSON string (`--param '"a=b"'`).
 */
export function parametersFrom(params: string[]): QueryParameters | undefined {
  if (params.length === 0) return undefined;
  const matches = params.map((param) => NAMED.exec(param));
  if (matches.every((match) => match === null)) return params.map(parameterValue);
  if (matches.some((match) => match === null))
    throw new UsageError(
      `--param: write every one as NAME=VALUE (named placeholders) or every one as VALUE (positional ?), not both; a positional value with = in it is written as a JSON string, e.g. --param '"a=b"'.`,
    );
  const named: Record<string, Value> = {};
  for (const match of matches) {
    const [, name = "", text = ""] = match ?? [];
    if (Object.hasOwn(named, name)) throw new UsageError(`--param ${name} is given twice.`);
    named[name] = parameterValue(text);
  }
  return named;
}

/**
 * A `--param` value: JSON (42, 1.5, true, null, "text"), else the text as it
 * is. An integer beyond 2^53 stays text, as the service asks for 64-bit
 * integers (JSON numbers would round it).
 */
export function parameterValue(text: string): Value {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  if (typeof parsed === "number" && /^\s*-?\d+\s*$/.test(text) && !Number.isSafeInteger(parsed)) return text.trim();
  if (parsed === null || typeof parsed === "string" || typeof parsed === "number" || typeof parsed === "boolean")
    return parsed;
  throw new UsageError(
    `--param ${text}: a value is a string, a number, true, false or null, not a JSON ${Array.isArray(parsed) ? "array" : "object"}.`,
  );
}

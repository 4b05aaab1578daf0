/**
 * Column types of a TableDefinition and the text each accepts (docs/api.md).
 *
 * These checks run on every field of every upload, so they read the text's
 * UTF-16 code units from a typed array (`charCodes`: the numbers
 * `charCodeAt` gives, about twice as fast to read as the string itself)
 * instead of matching regexes with groups or slicing: nothing here
 * allocates, except where a long number is handed to BigInt or Number.
 *
 * Accepted text, exactly as written (no trimming, no locale formats):
 * - INTEGER: optional `+`/`-`, then ASCII digits, within signed 64 bits.
 * - DOUBLE: optional sign, digits with an optional `.` (`1`, `1.`, `.5`,
 *   `1.5`), optional exponent (`e-3`), and finite (`1e999` is refused);
 *   no hex, `Infinity` or `NaN`.
 * - BOOLEAN: `true`, `false` (any letter case), `1`, `0`.
 * - DATE: `YYYY-MM-DD`, a real day of the proleptic Gregorian calendar.
 * - TIMESTAMP: a DATE, `T` or a space, `HH:MM`, optional `:SS` and then an
 *   optional fraction of 1-9 digits, and an optional zone: `Z`, `±HH`,
 *   `±HHMM` or `±HH:MM` (the short forms are what PostgreSQL exports).
 * - STRING: anything.
 * An unquoted empty field is NULL whatever the type; a quoted one (`""`) is
 * the empty string in a STRING column and NULL in any other.
 */

import { Buffer } from "node:buffer";

/** Every column type, in the order messages list them. */
export const DATA_TYPES = ["STRING", "INTEGER", "DOUBLE", "BOOLEAN", "DATE", "TIMESTAMP"] as const;
export type DataTypeName = (typeof DATA_TYPES)[number];

/** What each type accepts, for messages that tell the user what to write instead. */
export const TYPE_EXPECTATIONS: Record<DataTypeName, string> = {
  STRING: "any text",
  INTEGER: "a whole number from -9223372036854775808 to 9223372036854775807",
  DOUBLE: "a decimal number such as 42, -1.5 or 6.02e23",
  BOOLEAN: "true, false, 1 or 0",
  DATE: "a date written YYYY-MM-DD",
  TIMESTAMP: "an ISO 8601 date-time such as 2024-01-31T13:45:00Z",
};

const PLUS = 43;
const MINUS = 45;
const DOT = 46;
const COLON = 58;
const ZERO = 48;
const NINE = 57;
const SPACE = 32;
const UPPER_T = 84;
const UPPER_Z = 90;

// Longest magnitude of a signed 64-bit integer: 9223372036854775808 has 19 digits.
const INT64_DIGITS = 19;
const INT64_MAX = 9223372036854775807n;
const INT64_MIN_MAGNITUDE = 9223372036854775808n;

// Below this length, and without an exponent, a decimal cannot overflow to Infinity.
const DOUBLE_SAFE_LENGTH = 300;
const LOWER_E = 101;

function isDigit(code: number): boolean {
  return code >= ZERO && code <= NINE;
}

/** A text's UTF-16 code units, index for index: what the checks read. */
export type CharCodes = Uint16Array;

// Texts this long or longer are converted by the platform (one native copy); shorter ones in a loop (no call).
const NATIVE_CONVERSION_CHARS = 64;
const LITTLE_ENDIAN = new Uint16Array(new Uint8Array([1, 0]).buffer)[0] === 1;

/**
 * The code units of `text`, written into `into` when it is long enough (a
 * longer array keeps stale codes past the text: the checks never read
 * beyond their range).
 */
export function charCodes(text: string, into?: CharCodes): CharCodes {
  const length = text.length;
  const codes = into !== undefined && into.length >= length ? into : new Uint16Array(length);
  if (length >= NATIVE_CONVERSION_CHARS && LITTLE_ENDIAN) {
    Buffer.from(codes.buffer, codes.byteOffset, length * 2).write(text, "utf16le");
  } else {
    for (let at = 0; at < length; at++) codes[at] = text.charCodeAt(at);
  }
  return codes;
}

/** `codes[start, end)` as a string, in pieces small enough to spread into a call. */
function textOf(codes: CharCodes, start: number, end: number): string {
  let text = "";
  for (let at = start; at < end; at += 4096)
    text += String.fromCharCode(...codes.subarray(at, Math.min(end, at + 4096)));
  return text;
}

/*
 * Every check reads the field `codes[start, end)` in place, so a caller that
 * holds a whole chunk of the file need not cut each field out of it; the
 * result never depends on characters outside the range.
 */

/** Whether `codes[start, end)` is an INTEGER: optional sign, ASCII digits, within signed 64 bits. */
export function isIntegerText(codes: CharCodes, start = 0, end = codes.length): boolean {
  const first = codes[start];
  const from = first === PLUS || first === MINUS ? start + 1 : start;
  if (from >= end) return false;
  for (let at = from; at < end; at++) if (!isDigit(codes[at]!)) return false;
  if (end - from < INT64_DIGITS) return true;
  // Only 19 digits after any leading zeros can fall either side of the limit; BigInt settles them exactly.
  let significant = from;
  while (significant < end && codes[significant] === ZERO) significant++;
  const digits = end - significant;
  if (digits !== INT64_DIGITS) return digits < INT64_DIGITS;
  const magnitude = BigInt(textOf(codes, significant, end));
  return first === MINUS ? magnitude <= INT64_MIN_MAGNITUDE : magnitude <= INT64_MAX;
}

/** Whether `codes[start, end)` is a DOUBLE: `[+-](digits[.digits] | .digits)[e[+-]digits]`, and finite. */
export function isDoubleText(codes: CharCodes, start = 0, end = codes.length): boolean {
  let at = start;
  if (at < end && (codes[at] === PLUS || codes[at] === MINUS)) at++;
  const integerFrom = at;
  while (at < end && isDigit(codes[at]!)) at++;
  let mantissaDigits = at - integerFrom;
  if (at < end && codes[at] === DOT) {
    const fractionFrom = ++at;
    while (at < end && isDigit(codes[at]!)) at++;
    mantissaDigits += at - fractionFrom;
  }
  if (mantissaDigits === 0) return false;
  // Digits of the exponent, 0 without one.
  let exponentDigits = 0;
  if (at < end && (codes[at]! | 0x20) === LOWER_E) {
    at++;
    if (at < end && (codes[at] === PLUS || codes[at] === MINUS)) at++;
    const digitsFrom = at;
    while (at < end && isDigit(codes[at]!)) at++;
    exponentDigits = at - digitsFrom;
    if (exponentDigits === 0) return false;
  }
  if (at !== end) return false;
  // Below 10^(DOUBLE_SAFE_LENGTH - 100) times 10^99 a value stays below the largest double (~1.8e308).
  if (end - start < DOUBLE_SAFE_LENGTH && exponentDigits === 0) return true;
  if (end - start < DOUBLE_SAFE_LENGTH - 100 && exponentDigits <= 2) return true;
  return Number.isFinite(Number(textOf(codes, start, end)));
}

/** Whether `codes[start, end)` is a BOOLEAN: true/false in any letter case, or 1/0. */
export function isBooleanText(codes: CharCodes, start = 0, end = codes.length): boolean {
  return booleanValue(codes, start, end) !== undefined;
}

// Lower-casing by OR-ing 0x20 only works for letters; the digits and other characters compared here never collide.
function booleanValue(codes: CharCodes, start: number, end: number): 1 | 0 | undefined {
  switch (end - start) {
    case 1: {
      const code = codes[start];
      return code === ZERO + 1 ? 1 : code === ZERO ? 0 : undefined;
    }
    case 4:
      return (codes[start]! | 0x20) === 116 &&
        (codes[start + 1]! | 0x20) === 114 &&
        (codes[start + 2]! | 0x20) === 117 &&
        (codes[start + 3]! | 0x20) === 101
        ? 1
        : undefined;
    case 5:
      return (codes[start]! | 0x20) === 102 &&
        (codes[start + 1]! | 0x20) === 97 &&
        (codes[start + 2]! | 0x20) === 108 &&
        (codes[start + 3]! | 0x20) === 115 &&
        (codes[start + 4]! | 0x20) === 101
        ? 0
        : undefined;
    default:
      return undefined;
  }
}

/** Two ASCII digits at `at` as a number, or -1 (also when they would run past `end`). */
function twoDigits(codes: CharCodes, at: number, end: number): number {
  return at + 2 > end ? -1 : digitPair(codes, at);
}

/** Two ASCII digits at `at` as a number, or -1; the caller has checked that both lie in the field. */
function digitPair(codes: CharCodes, at: number): number {
  const high = codes[at]! - ZERO;
  const low = codes[at + 1]! - ZERO;
  // Unsigned, a code below "0" is above 9 too.
  return high >>> 0 <= 9 && low >>> 0 <= 9 ? high * 10 + low : -1;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Whether a valid `YYYY-MM-DD` starts at `start` (the caller checks what follows; `end` bounds the reads). */
function hasDatePrefix(codes: CharCodes, start: number, end: number): boolean {
  if (end - start < 10 || codes[start + 4] !== MINUS || codes[start + 7] !== MINUS) return false;
  const century = digitPair(codes, start);
  const yearInCentury = digitPair(codes, start + 2);
  const month = digitPair(codes, start + 5);
  const day = digitPair(codes, start + 8);
  if (century < 0 || yearInCentury < 0 || month < 1 || month > 12 || day < 1) return false;
  return day <= 28 || day <= daysInMonth(century * 100 + yearInCentury, month);
}

/** Whether `codes[start, end)` is a DATE: `YYYY-MM-DD` and a real calendar day. */
export function isDateText(codes: CharCodes, start = 0, end = codes.length): boolean {
  return end - start === 10 && hasDatePrefix(codes, start, end);
}

/** Whether `codes[start, end)` is a TIMESTAMP: ISO 8601 date and time, optional seconds, fraction and zone. */
export function isTimestampText(codes: CharCodes, start = 0, end = codes.length): boolean {
  return timestampZoneStart(codes, start, end) >= 0;
}

/** Whether `text` is a DATE in its stored form (STORED_AS): as written. */
export function isStoredDate(text: string): boolean {
  return isDateText(valueCodes(text), 0, text.length);
}

/** Whether `text` is a TIMESTAMP in its stored form (STORED_AS): a space, seconds, no zone, no trailing zero. */
export function isStoredTimestamp(text: string): boolean {
  const length = text.length;
  return (
    timestampZoneStart(valueCodes(text), 0, length) === length &&
    text.charCodeAt(10) === SPACE &&
    text.charCodeAt(16) === COLON &&
    (length === 19 || text.charCodeAt(length - 1) !== ZERO)
  );
}

/**
 * Validates a TIMESTAMP in `codes[start, end)` and returns where its zone
 * designator starts (`end` when there is none), or -1 when it is not one.
 */
function timestampZoneStart(codes: CharCodes, start: number, end: number): number {
  if (end - start < 16 || !hasDatePrefix(codes, start, end)) return -1;
  const separator = codes[start + 10];
  if (separator !== UPPER_T && separator !== SPACE) return -1;
  const hour = digitPair(codes, start + 11);
  const minute = digitPair(codes, start + 14);
  if (hour < 0 || hour > 23 || codes[start + 13] !== COLON || minute < 0 || minute > 59) return -1;
  let at = start + 16;
  if (at < end && codes[at] === COLON) {
    const second = twoDigits(codes, at + 1, end);
    if (second < 0 || second > 59) return -1;
    at += 3;
    if (at < end && codes[at] === DOT) {
      const digitsFrom = ++at;
      while (at < end && isDigit(codes[at]!)) at++;
      const digits = at - digitsFrom;
      if (digits < 1 || digits > 9) return -1;
    }
  }
  if (at === end) return end;
  const zone = codes[at];
  if (zone === UPPER_Z) return at + 1 === end ? at : -1;
  if (zone !== PLUS && zone !== MINUS) return -1;
  const offsetHour = twoDigits(codes, at + 1, end);
  if (offsetHour < 0 || offsetHour > 23) return -1;
  const rest = end - (at + 3);
  if (rest === 0) return at;
  const minuteAt = rest === 3 && codes[at + 3] === COLON ? at + 4 : rest === 2 ? at + 3 : -1;
  if (minuteAt < 0) return -1;
  const offsetMinute = twoDigits(codes, minuteAt, end);
  return offsetMinute >= 0 && offsetMinute <= 59 ? at : -1;
}

/** Checks one non-empty field, `codes[start, end)`, against a type. */
export type ValueCheck = (codes: CharCodes, start: number, end: number) => boolean;

const acceptAnything: ValueCheck = () => true;

/** The check for a type, chosen once per column so the per-field loop does not switch on the type. */
export function valueCheck(type: DataTypeName): ValueCheck {
  switch (type) {
    case "STRING":
      return acceptAnything;
    case "INTEGER":
      return isIntegerText;
    case "DOUBLE":
      return isDoubleText;
    case "BOOLEAN":
      return isBooleanText;
    case "DATE":
      return isDateText;
    case "TIMESTAMP":
      return isTimestampText;
  }
}

/**
 * How BOOLEAN, DATE and TIMESTAMP values are stored, whichever accepted
 * form the file used (see toSqlValue): what a query compares them with
 * and what results hold. The schema says it in `DataTypeOptions.StoredAs`;
 * the other types are stored as written.
 */
export const STORED_AS: Partial<Record<DataTypeName, string>> = {
  BOOLEAN: "1/0",
  DATE: "YYYY-MM-DD",
  TIMESTAMP: "YYYY-MM-DD HH:MM:SS[.fff]",
};

/** A field converted for SQL: BOOLEAN as 1/0, INTEGER as number (bigint beyond 2^53), NULL for empty. */
export type SqlValue = string | number | bigint | null;

/**
 * Converts a field that passed its type's check into the value stored for
 * SQL; `null` is an unquoted empty field (NULL), `""` a quoted one (the
 * empty string in a STRING column, NULL in any other). DATE stays as
 * written; TIMESTAMP becomes SQLite's own form `YYYY-MM-DD HH:MM:SS[.f]`
 * (what `datetime()` writes), a zone converted to UTC and dropped, the
 * fraction without trailing zeros, so that text comparison follows time
 * order and one instant has one text.
 */
export function toSqlValue(type: DataTypeName, text: string | null): SqlValue {
  if (text === null) return null;
  if (text === "") return type === "STRING" ? "" : null;
  switch (type) {
    case "STRING":
    case "DATE":
      return text;
    case "INTEGER": {
      const value = Number(text);
      return Number.isSafeInteger(value) ? value : BigInt(text);
    }
    case "DOUBLE":
      return Number(text);
    case "BOOLEAN":
      return booleanValue(valueCodes(text), 0, text.length) ?? null;
    case "TIMESTAMP":
      return canonicalTimestamp(text, valueCodes(text));
  }
}

// The codes of a single value checked or converted (toSqlValue, the stored forms), in one array reused from value to value.
let valueCodesArray: CharCodes = new Uint16Array(64);

function valueCodes(text: string): CharCodes {
  valueCodesArray = charCodes(text, valueCodesArray);
  return valueCodesArray;
}

function canonicalTimestamp(text: string, codes: CharCodes): string {
  const zoneAt = timestampZoneStart(codes, 0, text.length);
  const hasSeconds = text.charCodeAt(16) === COLON;
  const fraction = hasSeconds ? significantFraction(text, 19, zoneAt) : "";
  const seconds = hasSeconds ? text.slice(17, 19) : "00";
  if (zoneAt === text.length) return `${text.slice(0, 10)} ${text.slice(11, 16)}:${seconds}${fraction}`;
  const offsetMinutes = zoneOffsetMinutes(codes, zoneAt, text.length);
  // Date arithmetic handles day, month and year rollover; setUTCFullYear keeps years 0-99 literal.
  const instant = new Date(0);
  instant.setUTCFullYear(Number(text.slice(0, 4)), Number(text.slice(5, 7)) - 1, Number(text.slice(8, 10)));
  instant.setUTCHours(Number(text.slice(11, 13)), Number(text.slice(14, 16)) - offsetMinutes, Number(seconds), 0);
  const year = instant.getUTCFullYear();
  // A zone can carry year 0000 back to -0001 (or 9999 on to 10000), past what SQLite's date functions read: kept, with its sign.
  const yearText = year < 0 ? `-${pad(-year, 4)}` : pad(year, 4);
  return (
    `${yearText}-${pad(instant.getUTCMonth() + 1, 2)}-${pad(instant.getUTCDate(), 2)} ` +
    `${pad(instant.getUTCHours(), 2)}:${pad(instant.getUTCMinutes(), 2)}:${seconds}${fraction}`
  );
}

function pad(value: number, digits: number): string {
  return String(value).padStart(digits, "0");
}

/** The fraction `text[from, to)` (a `.` and digits, or nothing) without its trailing zeros: `.500` is `.5`, `.000` nothing. */
function significantFraction(text: string, from: number, to: number): string {
  let end = to;
  while (end > from + 1 && text.charCodeAt(end - 1) === ZERO) end--;
  return end > from + 1 ? text.slice(from, end) : "";
}

function zoneOffsetMinutes(codes: CharCodes, zoneAt: number, end: number): number {
  const sign = codes[zoneAt];
  if (sign === UPPER_Z) return 0;
  const hours = twoDigits(codes, zoneAt + 1, end);
  const rest = end - (zoneAt + 3);
  const minutes = rest === 0 ? 0 : twoDigits(codes, rest === 3 ? zoneAt + 4 : zoneAt + 3, end);
  const total = hours * 60 + minutes;
  return sign === MINUS ? -total : total;
}

/** Bits of the candidate set: the types a column could still have during inference. */
export const INFER_INTEGER = 1;
export const INFER_DOUBLE = 2;
export const INFER_BOOLEAN = 4;
export const INFER_DATE = 8;
export const INFER_TIMESTAMP = 16;
/** Every type but STRING: where each column's inference starts. */
export const INFER_ALL = 31;

/**
 * Narrows a column's candidate set by one non-empty field, `codes[start, end)`.
 * Numbers written with a redundant leading zero (`007`, `-01.5`) do not
 * count as INTEGER or DOUBLE here, so codes such as ZIP codes keep their
 * zeros as STRING; a declared INTEGER or DOUBLE column still accepts them.
 */
export function narrowCandidates(candidates: number, codes: CharCodes, start = 0, end = codes.length): number {
  let fits = 0;
  if (candidates & (INFER_INTEGER | INFER_DOUBLE) && !hasRedundantLeadingZero(codes, start, end)) {
    if (candidates & INFER_INTEGER && isIntegerText(codes, start, end)) fits |= INFER_INTEGER | INFER_DOUBLE;
    else if (candidates & INFER_DOUBLE && isDoubleText(codes, start, end)) fits |= INFER_DOUBLE;
  }
  if (candidates & INFER_BOOLEAN && isBooleanText(codes, start, end)) fits |= INFER_BOOLEAN;
  if (candidates & INFER_DATE && isDateText(codes, start, end)) fits |= INFER_DATE;
  if (candidates & INFER_TIMESTAMP && isTimestampText(codes, start, end)) fits |= INFER_TIMESTAMP;
  return candidates & fits;
}

function hasRedundantLeadingZero(codes: CharCodes, start: number, end: number): boolean {
  const first = codes[start];
  const at = first === PLUS || first === MINUS ? start + 1 : start;
  return at + 1 < end && codes[at] === ZERO && isDigit(codes[at + 1]!);
}

/**
 * The narrowest type left: INTEGER, then DOUBLE, then BOOLEAN, DATE,
 * TIMESTAMP (which share no values beyond 1/0, already taken by INTEGER),
 * and STRING when nothing else fits or the column had no values at all.
 */
export function inferredType(candidates: number, sawValue: boolean): DataTypeName {
  if (!sawValue) return "STRING";
  if (candidates & INFER_INTEGER) return "INTEGER";
  if (candidates & INFER_DOUBLE) return "DOUBLE";
  if (candidates & INFER_BOOLEAN) return "BOOLEAN";
  if (candidates & INFER_DATE) return "DATE";
  if (candidates & INFER_TIMESTAMP) return "TIMESTAMP";
  return "STRING";
}

/*
 * Sure patterns: regex sources of texts a check surely accepts, for the
 * fast path that takes a whole row with one native regex match
 * (csv-spans.ts `SureRows`). Each is a part of its type (digits that stay
 * within 64 bits and far from Infinity, days every such month has, short
 * exponents), never what the type is: a value outside it is read and
 * checked as usual. test/ingest/value-types.test.ts checks that every
 * text a pattern matches passes the check, and leaves inferred candidates
 * as they were.
 */
const SURE_DAY =
  "(?:[0-9]{4}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)" +
  // 29 February of a leap year: divisible by 4, and by 400 when it ends a century.
  "|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)";
const SURE_TIMESTAMP = `${SURE_DAY}[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\\.[0-9]{1,9})?)?(?:Z|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)?`;
const SURE_BOOLEAN = "(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[01])";
// Inference does not count a redundant leading zero as a number; a declared column does.
const SURE_MAGNITUDE = "(?:0|[1-9][0-9]{0,17})";
const SURE_DECLARED_MAGNITUDE = "[0-9]{1,18}";
const sureDouble = (magnitude: string) =>
  `[+-]?(?:${magnitude}(?:\\.[0-9]{0,30})?|\\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,2})?`;
/** A pattern no text matches. */
export const SURE_NOTHING = "(?!)";
/** Every character a sure pattern can match: a delimiter among them would be read as part of a value. */
export const SURE_PATTERN_CHARACTERS = /[0-9A-Za-z+\-.: ]/;

/** Values of a declared column's type that its check surely accepts; null for STRING (anything). */
export function surePattern(type: DataTypeName): string | null {
  switch (type) {
    case "STRING":
      return null;
    case "INTEGER":
      return `[+-]?${SURE_DECLARED_MAGNITUDE}`;
    case "DOUBLE":
      return sureDouble(SURE_DECLARED_MAGNITUDE);
    case "BOOLEAN":
      return SURE_BOOLEAN;
    case "DATE":
      return SURE_DAY;
    case "TIMESTAMP":
      return SURE_TIMESTAMP;
  }
}

/**
 * Values that surely leave an inferred column's candidate set as it is
 * (`narrowCandidates` gives it back); null for an empty set (STRING:
 * anything), SURE_NOTHING for a set no pattern here keeps.
 */
export function sureCandidatesPattern(candidates: number): string | null {
  switch (candidates) {
    case 0:
      return null;
    case INFER_INTEGER | INFER_DOUBLE | INFER_BOOLEAN:
      return "[01]";
    case INFER_INTEGER | INFER_DOUBLE:
      return `[+-]?${SURE_MAGNITUDE}`;
    case INFER_DOUBLE:
      return sureDouble(SURE_MAGNITUDE);
    case INFER_BOOLEAN:
      return SURE_BOOLEAN;
    case INFER_DATE:
      return SURE_DAY;
    case INFER_TIMESTAMP:
      return SURE_TIMESTAMP;
    default:
      return SURE_NOTHING;
  }
}

/**
 * Column types of a TableDefinition and the text each accepts (DECISIONS §5).
 *
 * These checks run on every field of every upload, so they read characters
 * with `charCodeAt` instead of matching regexes with groups or slicing:
 * nothing here allocates, except the BigInt range check of 19-digit integers.
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
 * An empty field is NULL whatever the type.
 */

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

const DOUBLE_PATTERN = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
// Below this length, and without an exponent, a decimal cannot overflow to Infinity.
const DOUBLE_SAFE_LENGTH = 300;

function isDigit(code: number): boolean {
  return code >= ZERO && code <= NINE;
}

/** Whether `text` is an INTEGER: optional sign, ASCII digits, within signed 64 bits. */
export function isIntegerText(text: string): boolean {
  const length = text.length;
  let start = 0;
  const first = text.charCodeAt(0);
  if (first === PLUS || first === MINUS) start = 1;
  if (start === length) return false;
  let significant = -1;
  for (let i = start; i < length; i++) {
    const code = text.charCodeAt(i);
    if (!isDigit(code)) return false;
    if (significant < 0 && code !== ZERO) significant = i;
  }
  if (significant < 0) return true;
  const digits = length - significant;
  if (digits < INT64_DIGITS) return true;
  if (digits > INT64_DIGITS) return false;
  // Only 19-digit magnitudes can fall either side of the limit; BigInt settles them exactly.
  const magnitude = BigInt(text.slice(significant));
  return first === MINUS ? magnitude <= INT64_MIN_MAGNITUDE : magnitude <= INT64_MAX;
}

/** Whether `text` is a DOUBLE: finite decimal or exponent notation. */
export function isDoubleText(text: string): boolean {
  if (!DOUBLE_PATTERN.test(text)) return false;
  if (text.length < DOUBLE_SAFE_LENGTH && !hasExponent(text)) return true;
  return Number.isFinite(Number(text));
}

function hasExponent(text: string): boolean {
  for (let i = text.length - 1; i > 0; i--) {
    const code = text.charCodeAt(i) | 0x20;
    if (code === 101) return true;
  }
  return false;
}

/** Whether `text` is a BOOLEAN: true/false in any letter case, or 1/0. */
export function isBooleanText(text: string): boolean {
  return booleanValue(text) !== undefined;
}

// Lower-casing by OR-ing 0x20 only works for letters; the digits and other characters compared here never collide.
function booleanValue(text: string): 1 | 0 | undefined {
  switch (text.length) {
    case 1:
      return text === "1" ? 1 : text === "0" ? 0 : undefined;
    case 4:
      return (text.charCodeAt(0) | 0x20) === 116 &&
        (text.charCodeAt(1) | 0x20) === 114 &&
        (text.charCodeAt(2) | 0x20) === 117 &&
        (text.charCodeAt(3) | 0x20) === 101
        ? 1
        : undefined;
    case 5:
      return (text.charCodeAt(0) | 0x20) === 102 &&
        (text.charCodeAt(1) | 0x20) === 97 &&
        (text.charCodeAt(2) | 0x20) === 108 &&
        (text.charCodeAt(3) | 0x20) === 115 &&
        (text.charCodeAt(4) | 0x20) === 101
        ? 0
        : undefined;
    default:
      return undefined;
  }
}

/** Two ASCII digits at `at` as a number, or -1. */
function twoDigits(text: string, at: number): number {
  const high = text.charCodeAt(at);
  const low = text.charCodeAt(at + 1);
  if (!isDigit(high) || !isDigit(low)) return -1;
  return (high - ZERO) * 10 + (low - ZERO);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Whether `text` starts with a valid `YYYY-MM-DD` (the caller checks what follows). */
function hasDatePrefix(text: string): boolean {
  const century = twoDigits(text, 0);
  const yearInCentury = twoDigits(text, 2);
  if (century < 0 || yearInCentury < 0) return false;
  if (text.charCodeAt(4) !== MINUS || text.charCodeAt(7) !== MINUS) return false;
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= daysInMonth(century * 100 + yearInCentury, month);
}

/** Whether `text` is a DATE: `YYYY-MM-DD` and a real calendar day. */
export function isDateText(text: string): boolean {
  return text.length === 10 && hasDatePrefix(text);
}

/** Whether `text` is a TIMESTAMP: ISO 8601 date and time, optional seconds, fraction and zone. */
export function isTimestampText(text: string): boolean {
  return timestampZoneStart(text) >= 0;
}

/**
 * Validates a TIMESTAMP and returns where its zone designator starts
 * (`text.length` when there is none), or -1 when `text` is not one.
 */
function timestampZoneStart(text: string): number {
  const length = text.length;
  if (length < 16 || !hasDatePrefix(text)) return -1;
  const separator = text.charCodeAt(10);
  if (separator !== UPPER_T && separator !== SPACE) return -1;
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  if (hour < 0 || hour > 23 || text.charCodeAt(13) !== COLON || minute < 0 || minute > 59) return -1;
  let at = 16;
  if (at < length && text.charCodeAt(at) === COLON) {
    const second = twoDigits(text, at + 1);
    if (second < 0 || second > 59) return -1;
    at += 3;
    if (at < length && text.charCodeAt(at) === DOT) {
      let digits = 0;
      at++;
      while (at < length && isDigit(text.charCodeAt(at))) {
        at++;
        digits++;
      }
      if (digits < 1 || digits > 9) return -1;
    }
  }
  if (at === length) return length;
  const zone = text.charCodeAt(at);
  if (zone === UPPER_Z) return at + 1 === length ? at : -1;
  if (zone !== PLUS && zone !== MINUS) return -1;
  const offsetHour = twoDigits(text, at + 1);
  if (offsetHour < 0 || offsetHour > 23) return -1;
  const rest = length - (at + 3);
  if (rest === 0) return at;
  const minuteAt = rest === 3 && text.charCodeAt(at + 3) === COLON ? at + 4 : rest === 2 ? at + 3 : -1;
  if (minuteAt < 0) return -1;
  const offsetMinute = twoDigits(text, minuteAt);
  return offsetMinute >= 0 && offsetMinute <= 59 ? at : -1;
}

/** Checks one non-empty field against a type. */
export type ValueCheck = (text: string) => boolean;

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

/** A field converted for SQL: BOOLEAN as 1/0, INTEGER as number (bigint beyond 2^53), NULL for empty. */
export type SqlValue = string | number | bigint | null;

/**
 * Converts a field that passed its type's check into the value stored for
 * SQL. DATE stays as written; TIMESTAMP becomes `YYYY-MM-DDTHH:MM:SS[.f]`,
 * with a zone converted to UTC and written `Z`, so that text comparison of
 * values without a zone, or of values with one, follows time order.
 */
export function toSqlValue(type: DataTypeName, text: string): SqlValue {
  if (text === "") return null;
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
      return booleanValue(text) ?? null;
    case "TIMESTAMP":
      return canonicalTimestamp(text);
  }
}

function canonicalTimestamp(text: string): string {
  const zoneAt = timestampZoneStart(text);
  const hasSeconds = text.charCodeAt(16) === COLON;
  const clock = hasSeconds ? text.slice(11, zoneAt) : `${text.slice(11, 16)}:00`;
  const local = `${text.slice(0, 10)}T${clock}`;
  if (zoneAt === text.length) return local;
  const offsetMinutes = zoneOffsetMinutes(text, zoneAt);
  const fraction = hasSeconds ? text.slice(19, zoneAt) : "";
  // Date arithmetic handles day, month and year rollover; setUTCFullYear keeps years 0-99 literal.
  const instant = new Date(0);
  instant.setUTCFullYear(Number(text.slice(0, 4)), Number(text.slice(5, 7)) - 1, Number(text.slice(8, 10)));
  instant.setUTCHours(
    Number(text.slice(11, 13)),
    Number(text.slice(14, 16)) - offsetMinutes,
    hasSeconds ? Number(text.slice(17, 19)) : 0,
    0,
  );
  return `${instant.toISOString().slice(0, -5)}${fraction}Z`;
}

function zoneOffsetMinutes(text: string, zoneAt: number): number {
  const sign = text.charCodeAt(zoneAt);
  if (sign === UPPER_Z) return 0;
  const hours = twoDigits(text, zoneAt + 1);
  const rest = text.length - (zoneAt + 3);
  const minutes = rest === 0 ? 0 : twoDigits(text, rest === 3 ? zoneAt + 4 : zoneAt + 3);
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
 * Narrows a column's candidate set by one non-empty field. Numbers written
 * with a redundant leading zero (`007`, `-01.5`) do not count as INTEGER or
 * DOUBLE here, so codes such as ZIP codes keep their zeros as STRING; a
 * declared INTEGER or DOUBLE column still accepts them.
 */
export function narrowCandidates(candidates: number, text: string): number {
  let fits = 0;
  if (candidates & (INFER_INTEGER | INFER_DOUBLE) && !hasRedundantLeadingZero(text)) {
    if (candidates & INFER_INTEGER && isIntegerText(text)) fits |= INFER_INTEGER | INFER_DOUBLE;
    else if (candidates & INFER_DOUBLE && isDoubleText(text)) fits |= INFER_DOUBLE;
  }
  if (candidates & INFER_BOOLEAN && isBooleanText(text)) fits |= INFER_BOOLEAN;
  if (candidates & INFER_DATE && isDateText(text)) fits |= INFER_DATE;
  if (candidates & INFER_TIMESTAMP && isTimestampText(text)) fits |= INFER_TIMESTAMP;
  return candidates & fits;
}

function hasRedundantLeadingZero(text: string): boolean {
  const first = text.charCodeAt(0);
  const at = first === PLUS || first === MINUS ? 1 : 0;
  return text.charCodeAt(at) === ZERO && isDigit(text.charCodeAt(at + 1));
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

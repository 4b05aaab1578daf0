/**
 * A tokenizer that splits SQL text exactly where SQLite's own tokenizer
 * (`sqlite3GetToken` in tokenize.c) does, so that what this service decides
 * about a query (which names are data items, which statement kind it is)
 * rests on the same tokens SQLite will parse. Offsets are JavaScript string
 * indexes (UTF-16 code units); every non-ASCII character is an identifier
 * character, as every byte >= 0x80 is for SQLite.
 *
 * SQLite quirks kept on purpose: an unterminated block comment runs to the
 * end of the text, while a lone `/*` at the very end is `/` then `*`; `!`
 * alone, an unterminated quote or `[`, a malformed blob literal and a number
 * glued to letters (`1abc`) are illegal tokens, reported here as errors.
 */

export type TokenKind =
  "whitespace" | "comment" | "string" | "blob" | "number" | "identifier" | "parameter" | "operator" | "semicolon";

/** How an identifier was written: bare (also every keyword), `"..."`, `` `...` `` or `[...]`. */
export type IdentifierQuote = "none" | '"' | "`" | "[";

interface TokenSpan {
  /** The exact source text of the token. */
  text: string;
  /** Offset of the first character. */
  start: number;
  /** Offset just past the last character. */
  end: number;
}

export type Token =
  | (TokenSpan & { kind: "identifier"; value: string; quote: IdentifierQuote })
  | (TokenSpan & { kind: "string"; value: string })
  | (TokenSpan & { kind: Exclude<TokenKind, "identifier" | "string"> });

export type IdentifierToken = Extract<Token, { kind: "identifier" }>;

export type TokenizeResult = { ok: true; tokens: Token[] } | { ok: false; message: string; offset: number };

const TWO_CHAR_OPERATORS = new Set(["||", "<=", ">=", "<>", "!=", "==", "<<", ">>", "->"]);
const ONE_CHAR_OPERATORS = new Set(["(", ")", ",", ".", "+", "-", "*", "/", "%", "=", "<", ">", "&", "|", "~"]);

/** SQLite's sqlite3Isspace; a run of white space may hold \v, but \v cannot start one. */
function isSpace(c: string | undefined): boolean {
  return c === " " || c === "\t" || c === "\n" || c === "\f" || c === "\r" || c === "\v" || c === "\uFEFF";
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

function isHexDigit(c: string | undefined): boolean {
  return c !== undefined && /^[0-9A-Fa-f]$/.test(c);
}

/** SQLite's IdChar: letters, digits, `_`, `$` and anything non-ASCII. */
function isIdChar(c: string | undefined): boolean {
  if (c === undefined) return false;
  return /^[A-Za-z0-9_$]$/.test(c) || c.charCodeAt(0) >= 0x80;
}

/** Characters that may start a bare identifier or keyword. */
function isIdStart(c: string | undefined): boolean {
  if (c === undefined) return false;
  return /^[A-Za-z_]$/.test(c) || c.charCodeAt(0) >= 0x80;
}

/** Splits SQL into tokens, whitespace and comments included, so the tokens' texts concatenate to the input. */
export function tokenize(sql: string): TokenizeResult {
  const tokens: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const scanned = scanToken(sql, i);
    if ("message" in scanned) return { ok: false, message: scanned.message, offset: i };
    const { kind, end } = scanned;
    const span = { text: sql.slice(i, end), start: i, end };
    if (kind === "identifier") tokens.push({ ...span, kind, ...identifierValue(span.text) });
    else if (kind === "string") tokens.push({ ...span, kind, value: unquote(span.text) });
    else tokens.push({ ...span, kind });
    i = end;
  }
  return { ok: true, tokens };
}

type Scanned = { kind: TokenKind; end: number } | { message: string };

function scanToken(sql: string, start: number): Scanned {
  const c = sql[start]!;
  const next = sql[start + 1];
  if (isSpace(c) && c !== "\v") {
    let i = start + 1;
    while (isSpace(sql[i])) i++;
    return { kind: "whitespace", end: i };
  }
  if (c === "-" && next === "-") {
    const newline = sql.indexOf("\n", start + 2);
    return { kind: "comment", end: newline === -1 ? sql.length : newline };
  }
  if (c === "/" && next === "*" && start + 2 < sql.length) {
    const close = sql.indexOf("*/", start + 2);
    return { kind: "comment", end: close === -1 ? sql.length : close + 2 };
  }
  if (c === "-" && next === ">") return { kind: "operator", end: start + (sql[start + 2] === ">" ? 3 : 2) };
  if (c === "'" || c === '"' || c === "`") return scanQuoted(sql, start, c);
  if (c === "[") {
    const close = sql.indexOf("]", start + 1);
    if (close === -1) return { message: `A bracket-quoted identifier ([...]) is not closed with ']'` };
    return { kind: "identifier", end: close + 1 };
  }
  if (isDigit(c) || (c === "." && isDigit(next))) return scanNumber(sql, start);
  if ((c === "x" || c === "X") && next === "'") return scanBlob(sql, start);
  if (isIdStart(c)) {
    let i = start + 1;
    while (isIdChar(sql[i])) i++;
    return { kind: "identifier", end: i };
  }
  if (c === "?") {
    let i = start + 1;
    while (isDigit(sql[i])) i++;
    return { kind: "parameter", end: i };
  }
  if (c === "$" || c === "@" || c === ":" || c === "#") return scanNamedParameter(sql, start);
  if (c === ";") return { kind: "semicolon", end: start + 1 };
  const pair = sql.slice(start, start + 2);
  if (TWO_CHAR_OPERATORS.has(pair)) return { kind: "operator", end: start + 2 };
  if (ONE_CHAR_OPERATORS.has(c)) return { kind: "operator", end: start + 1 };
  if (c === "\0") return { message: "The query contains a NUL character" };
  return { message: `unrecognized token: "${c}"` };
}

/** `'...'` is a string; `"..."` and `` `...` `` are identifiers; the quote character doubled stands for itself. */
function scanQuoted(sql: string, start: number, quote: string): Scanned {
  let i = start + 1;
  for (;;) {
    const close = sql.indexOf(quote, i);
    if (close === -1) {
      const what = quote === "'" ? "A string literal ('...')" : `A quoted identifier (${quote}...${quote})`;
      return { message: `${what} is not closed with ${quote}` };
    }
    if (sql[close + 1] !== quote) return { kind: quote === "'" ? "string" : "identifier", end: close + 1 };
    i = close + 2;
  }
}

/** Decimal and hexadecimal integers, reals with fraction and exponent, `_` digit separators as SQLite 3.46+ reads them. */
function scanNumber(sql: string, start: number): Scanned {
  let i = start;
  const digits = (test: (c: string | undefined) => boolean) => {
    while (test(sql[i]) || (sql[i] === "_" && i > start)) i++;
  };
  if (sql[i] === "0" && (sql[i + 1] === "x" || sql[i + 1] === "X") && isHexDigit(sql[i + 2])) {
    i += 2;
    digits(isHexDigit);
  } else {
    digits(isDigit);
    if (sql[i] === ".") {
      i++;
      digits(isDigit);
    }
    const sign = sql[i + 1] === "+" || sql[i + 1] === "-";
    if ((sql[i] === "e" || sql[i] === "E") && (isDigit(sql[i + 1]) || (sign && isDigit(sql[i + 2])))) {
      i += 2;
      digits(isDigit);
    }
  }
  if (isIdChar(sql[i])) {
    while (isIdChar(sql[i])) i++;
    return { message: `unrecognized token: "${sql.slice(start, i)}"` };
  }
  return { kind: "number", end: i };
}

function scanBlob(sql: string, start: number): Scanned {
  let i = start + 2;
  while (isHexDigit(sql[i])) i++;
  if (sql[i] !== "'" || (i - start) % 2 === 1) {
    return { message: "A blob literal (X'...') must hold an even number of hexadecimal digits and end with '" };
  }
  return { kind: "blob", end: i + 1 };
}

/** `:name`, `@name`, `$name` (with Tcl-style `::` and a `(...)` suffix for `$`-style names, as SQLite allows). */
function scanNamedParameter(sql: string, start: number): Scanned {
  let i = start + 1;
  let nameChars = 0;
  while (i < sql.length) {
    const c = sql[i];
    if (isIdChar(c)) {
      nameChars++;
      i++;
    } else if (c === "(" && nameChars > 0) {
      i++;
      while (i < sql.length && !isSpace(sql[i]) && sql[i] !== ")") i++;
      if (sql[i] !== ")") return { message: `unrecognized token: "${sql.slice(start, i)}"` };
      i++;
      break;
    } else if (c === ":" && sql[i + 1] === ":") {
      i += 2;
    } else {
      break;
    }
  }
  if (nameChars === 0) return { message: `unrecognized token: "${sql.slice(start, i)}"` };
  return { kind: "parameter", end: i };
}

function identifierValue(text: string): { value: string; quote: IdentifierQuote } {
  const first = text[0];
  if (first === '"' || first === "`") return { value: unquote(text), quote: first };
  if (first === "[") return { value: text.slice(1, -1), quote: "[" };
  return { value: text, quote: "none" };
}

function unquote(text: string): string {
  const quote = text[0]!;
  return text.slice(1, -1).replaceAll(quote + quote, quote);
}

/** True for tokens that carry no meaning: whitespace and comments. */
export function isTrivia(token: Token): boolean {
  return token.kind === "whitespace" || token.kind === "comment";
}

/** The tokens without whitespace and comments. */
export function significantTokens(tokens: readonly Token[]): Token[] {
  return tokens.filter((token) => !isTrivia(token));
}

/** Upper case for ASCII letters only: SQLite's keywords are ASCII, and e.g. "ſ".toUpperCase() is "S". */
export function asciiUpperCase(text: string): string {
  return text.replace(/[a-z]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 32));
}

/** Lower case for ASCII letters only, the way SQLite compares identifiers. */
export function asciiLowerCase(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}

/** True when the token is a bare word equal to one of `keywords` (given in upper case), case-insensitively. */
export function isKeyword(token: Token | undefined, ...keywords: string[]): boolean {
  return (
    token !== undefined &&
    token.kind === "identifier" &&
    token.quote === "none" &&
    keywords.includes(asciiUpperCase(token.value))
  );
}

/** True for identifier tokens, bare (keywords included) or quoted. */
export function isIdentifier(token: Token | undefined): token is IdentifierToken {
  return token !== undefined && token.kind === "identifier";
}

/** True when the token is the operator or punctuation `text`. */
export function isOperator(token: Token | undefined, text: string): boolean {
  return token !== undefined && token.kind === "operator" && token.text === text;
}

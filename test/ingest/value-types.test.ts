import { describe, expect, it } from "vitest";
import {
  DATA_TYPES,
  INFER_ALL,
  INFER_BOOLEAN,
  INFER_DATE,
  INFER_DOUBLE,
  INFER_INTEGER,
  INFER_TIMESTAMP,
  charCodes,
  inferredType,
  isBooleanText as booleanCheck,
  isDateText as dateCheck,
  isDoubleText as doubleCheck,
  isIntegerText as integerCheck,
  isStoredTimestamp,
  isTimestampText as timestampCheck,
  narrowCandidates,
  SURE_PATTERN_CHARACTERS,
  sureCandidatesPattern,
  surePattern,
  toSqlValue,
  valueCheck,
  type CharCodes,
  type DataTypeName,
} from "../../src/worker/ingest/value-types";
import { sqliteInstance } from "../../src/worker/query/sqlite";

/** A check as these tests call it: on a string, or a range of one (the checks read the string's char codes). */
const onText =
  (check: (codes: CharCodes, start?: number, end?: number) => boolean) =>
  (text: string, start = 0, end = text.length) =>
    check(charCodes(text), start, end);
const isIntegerText = onText(integerCheck);
const isDoubleText = onText(doubleCheck);
const isBooleanText = onText(booleanCheck);
const isDateText = onText(dateCheck);
const isTimestampText = onText(timestampCheck);

function inferColumn(values: readonly string[]): DataTypeName {
  let candidates = INFER_ALL;
  let sawValue = false;
  for (const value of values) {
    if (value === "") continue;
    sawValue = true;
    candidates = narrowCandidates(candidates, charCodes(value));
  }
  return inferredType(candidates, sawValue);
}

describe("charCodes", () => {
  const codesOf = (text: string) => Array.from({ length: text.length }, (_, index) => text.charCodeAt(index));

  it("should give each UTF-16 code unit as charCodeAt does, for short and long texts", () => {
    for (const text of ["", "a,1", "Zoë 😀 \uFEFF\r\n", "x".repeat(63), `2024-01-31,Zoë,😀${"9".repeat(100)}`]) {
      expect([text, Array.from(charCodes(text))]).toEqual([text, codesOf(text)]);
    }
  });

  it("should write into the given array when it is long enough, and leave what follows the text", () => {
    const into = new Uint16Array(200).fill(7);
    const text = "é".repeat(80);
    const codes = charCodes(text, into);
    expect(codes).toBe(into);
    expect(Array.from(codes.subarray(0, 80))).toEqual(codesOf(text));
    expect(codes[80]).toBe(7);
    expect(charCodes("x".repeat(300), into)).not.toBe(into);
  });
});

describe("INTEGER", () => {
  it.each([
    "0",
    "-0",
    "+7",
    "42",
    "-42",
    "007",
    "9223372036854775807",
    "-9223372036854775808",
    "0009223372036854775807",
  ])("should accept %s", (text) => {
    expect(isIntegerText(text)).toBe(true);
  });

  it.each([
    "",
    "+",
    "-",
    "1.0",
    "1e3",
    " 1",
    "1 ",
    "1_000",
    "0x10",
    "١٢",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999",
  ])("should reject %j", (text) => {
    expect(isIntegerText(text)).toBe(false);
  });
});

describe("DOUBLE", () => {
  it.each([
    "0",
    "1",
    "-1.5",
    "+2.25",
    "1.",
    ".5",
    "-.5",
    "6.02e23",
    "1E-7",
    "1e+3",
    "1e-400",
    "1.7976931348623157e308",
  ])("should accept %s", (text) => {
    expect(isDoubleText(text)).toBe(true);
  });

  it.each([
    "",
    ".",
    "-",
    "e3",
    "1e",
    "1e+",
    "0x1F",
    "Infinity",
    "-Infinity",
    "NaN",
    "1e999",
    "1,5",
    "1.2.3",
    " 1",
    "1d",
  ])("should reject %j", (text) => {
    expect(isDoubleText(text)).toBe(false);
  });

  it("should reject a long digit string that overflows to Infinity", () => {
    expect(isDoubleText("9".repeat(400))).toBe(false);
    expect(isDoubleText("9".repeat(300))).toBe(true);
  });
});

describe("BOOLEAN", () => {
  it.each(["true", "false", "TRUE", "False", "tRuE", "1", "0"])("should accept %s", (text) => {
    expect(isBooleanText(text)).toBe(true);
  });

  it.each(["", "yes", "no", "t", "f", "2", "01", "truee", " true", "on"])("should reject %j", (text) => {
    expect(isBooleanText(text)).toBe(false);
  });
});

describe("DATE", () => {
  it.each(["2024-01-31", "2024-02-29", "2000-02-29", "1999-12-31", "0001-01-01", "9999-12-31"])(
    "should accept %s",
    (text) => {
      expect(isDateText(text)).toBe(true);
    },
  );

  it.each([
    "",
    "2023-02-29",
    "1900-02-29",
    "2024-04-31",
    "2024-13-01",
    "2024-00-10",
    "2024-01-00",
    "2024-1-01",
    "24-01-01",
    "2024/01/01",
    "2024-01-01T00:00:00",
    "2024-01-01 ",
  ])("should reject %j", (text) => {
    expect(isDateText(text)).toBe(false);
  });
});

describe("TIMESTAMP", () => {
  it.each([
    "2024-01-31T13:45:00Z",
    "2024-01-31 13:45:00",
    "2024-01-31T13:45",
    "2024-01-31T13:45:00.1",
    "2024-01-31T13:45:00.123456789Z",
    "2024-01-31T13:45:00+09:00",
    "2024-01-31T13:45:00-0530",
    "2024-01-31 13:45:00+00",
    "2024-02-29T23:59:59Z",
  ])("should accept %s", (text) => {
    expect(isTimestampText(text)).toBe(true);
  });

  it.each([
    "",
    "2024-01-31",
    "2024-01-31T",
    "2024-01-31T24:00:00",
    "2024-01-31T12:60:00",
    "2024-01-31T12:00:60",
    "2024-01-31T12:00:00.",
    "2024-01-31T12:00:00.1234567890",
    "2024-01-31T12:00:00ZZ",
    "2024-01-31T12:00:00+9",
    "2024-01-31T12:00:00+09:0",
    "2024-01-31T12:00:00+24:00",
    "2024-01-31T12:00:00 +09:00",
    "2024-02-30T12:00:00",
    "2024-01-31t12:00:00",
    "2024-01-31T1:00:00",
  ])("should reject %j", (text) => {
    expect(isTimestampText(text)).toBe(false);
  });
});

describe("valueCheck", () => {
  const check = (type: DataTypeName, text: string) => valueCheck(type)(charCodes(text), 0, text.length);

  it("should accept any text for STRING", () => {
    expect(check("STRING", "anything at all")).toBe(true);
  });

  it("should use the matching check for each other type", () => {
    expect(check("INTEGER", "12")).toBe(true);
    expect(check("INTEGER", "1.5")).toBe(false);
    expect(check("DOUBLE", "1.5")).toBe(true);
    expect(check("BOOLEAN", "FALSE")).toBe(true);
    expect(check("DATE", "2024-01-01")).toBe(true);
    expect(check("TIMESTAMP", "2024-01-01")).toBe(false);
  });
});

// A seeded generator, so a failure names an input that can be replayed.
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
}

function randomTexts(seed: number, count: number, alphabet: string, maxLength: number): string[] {
  const next = seededRandom(seed);
  return Array.from({ length: count }, () => {
    const length = Math.floor(next() * (maxLength + 1));
    let text = "";
    for (let i = 0; i < length; i++) text += alphabet[Math.floor(next() * alphabet.length)];
    return text;
  });
}

describe("checks on a range of a longer text", () => {
  const checks = { isIntegerText, isDoubleText, isBooleanText, isDateText, isTimestampText };
  const samples = [
    ...randomTexts(1, 3000, "0123456789+-.eE", 8),
    ...randomTexts(2, 3000, "0123456789-:T Z+.", 30),
    "2024-02-29",
    "2024-02-29T12:34:56.123456789+05:30",
    "2024-01-31 13:45",
    "2024-01-31T13:45:00Z",
    "9223372036854775807",
    "-9223372036854775808",
    "true",
    "FALSE",
    "1",
    "0",
    "1e5",
    ".5",
    "1.",
  ];
  // Characters that would change the answer if a check read past either end of its range.
  const surroundings = [
    ["", ""],
    ["7", "9"],
    ["+", "e5"],
    ["2024-01-0", ":00"],
    ["x", "Z"],
    ['"', '"'],
  ] as const;

  it.each(Object.entries(checks))("%s should answer for a range as for the same text alone", (_, check) => {
    for (const text of samples) {
      const alone = check(text);
      for (const [before, after] of surroundings) {
        const embedded = `${before}${text}${after}`;
        expect([text, before, check(embedded, before.length, before.length + text.length)]).toEqual([
          text,
          before,
          alone,
        ]);
      }
    }
  });

  it("narrowCandidates should answer for a range as for the same text alone", () => {
    for (const text of samples.filter((sample) => sample !== "")) {
      const alone = narrowCandidates(INFER_ALL, charCodes(text));
      expect([text, narrowCandidates(INFER_ALL, charCodes(`00${text}11`), 2, 2 + text.length)]).toEqual([text, alone]);
    }
  });

  it("isDoubleText should accept exactly the decimal and exponent notation of its pattern", () => {
    const pattern = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
    for (const text of randomTexts(3, 20000, "0123456789+-.eE x", 7)) {
      expect([text, isDoubleText(text)]).toEqual([text, pattern.test(text) && Number.isFinite(Number(text))]);
    }
  });
});

describe("isDoubleText at the edge of the largest double", () => {
  it("should accept what stays finite and refuse what overflows, with and without an exponent", () => {
    const texts = [
      `${"9".repeat(199)}e99`,
      `${"9".repeat(199)}e-99`,
      `${"9".repeat(200)}e99`,
      `${"9".repeat(208)}e99`,
      `${"9".repeat(209)}e99`,
      `${"9".repeat(299)}`,
      `${"9".repeat(309)}`,
      `0.${"0".repeat(250)}1e99`,
      "1.7976931348623157e308",
      "1.7976931348623159e308",
      "1e308",
      "1e309",
      "1e0000000000000000000009",
      "-2e99",
      "-2e-999",
    ];
    for (const text of texts) expect([text, isDoubleText(text)]).toEqual([text, Number.isFinite(Number(text))]);
  });
});

describe("toSqlValue", () => {
  it("should turn an unquoted empty field (null) into NULL whatever the type", () => {
    for (const type of DATA_TYPES) expect(toSqlValue(type, null)).toBeNull();
  });

  it('should keep a quoted "" as the empty string in a STRING column, and make it NULL in any other', () => {
    for (const type of DATA_TYPES) expect([type, toSqlValue(type, "")]).toEqual([type, type === "STRING" ? "" : null]);
  });

  it("should give numbers, and a bigint beyond 2^53", () => {
    expect(toSqlValue("INTEGER", "+007")).toBe(7);
    expect(toSqlValue("INTEGER", "-9223372036854775808")).toBe(-9223372036854775808n);
    expect(toSqlValue("DOUBLE", ".5")).toBe(0.5);
    expect(toSqlValue("DOUBLE", "6.02e23")).toBe(6.02e23);
  });

  it("should store BOOLEAN as 1 or 0", () => {
    expect(toSqlValue("BOOLEAN", "True")).toBe(1);
    expect(toSqlValue("BOOLEAN", "0")).toBe(0);
  });

  it("should keep DATE and STRING as written", () => {
    expect(toSqlValue("DATE", "2024-02-29")).toBe("2024-02-29");
    expect(toSqlValue("STRING", " x ")).toBe(" x ");
  });

  it("should write TIMESTAMP as SQLite does, with a space and seconds, a zone converted to UTC and dropped", () => {
    expect(toSqlValue("TIMESTAMP", "2024-01-31 13:45")).toBe("2024-01-31 13:45:00");
    expect(toSqlValue("TIMESTAMP", "2024-01-31T13:45:07")).toBe("2024-01-31 13:45:07");
    expect(toSqlValue("TIMESTAMP", "2024-01-31T13:45:07Z")).toBe("2024-01-31 13:45:07");
    expect(toSqlValue("TIMESTAMP", "2024-03-01T08:00:00.5+09:00")).toBe("2024-02-29 23:00:00.5");
    expect(toSqlValue("TIMESTAMP", "2024-12-31 20:30:00-0430")).toBe("2025-01-01 01:00:00");
    expect(toSqlValue("TIMESTAMP", "0050-06-01T12:00+00")).toBe("0050-06-01 12:00:00");
    expect(toSqlValue("TIMESTAMP", "0000-01-01 00:30+01")).toBe("-0001-12-31 23:30:00");
  });

  it("should write a fraction without its trailing zeros, so one instant has one text", () => {
    expect(toSqlValue("TIMESTAMP", "2024-01-31 13:45:07.250")).toBe("2024-01-31 13:45:07.25");
    expect(toSqlValue("TIMESTAMP", "2024-01-31 13:45:07.000")).toBe("2024-01-31 13:45:07");
    expect(toSqlValue("TIMESTAMP", "2024-01-31T13:45:07.000000001Z")).toBe("2024-01-31 13:45:07.000000001");
    expect(toSqlValue("TIMESTAMP", "2024-01-31T23:45:07.10-01:00")).toBe("2024-02-01 00:45:07.1");
  });

  it("should give what SQLite's own strftime gives for the same instant, and text that sorts in time order", async () => {
    const db = new (await sqliteInstance()).sql.Database();
    try {
      const random = seededRandom(20_240_131);
      const pick = (from: number, to: number) => from + Math.floor(random() * (to - from + 1));
      const two = (n: number) => String(n).padStart(2, "0");
      const instants: [stored: string, epoch: number][] = [];
      for (let i = 0; i < 400; i++) {
        const [year, month] = [pick(1, 9998), pick(1, 12)];
        const day = pick(1, month === 2 ? 28 : 30);
        const clock = `${two(pick(0, 23))}:${two(pick(0, 59))}` + (random() < 0.8 ? `:${two(pick(0, 59))}` : "");
        const zone = ["", "Z", `${random() < 0.5 ? "+" : "-"}${two(pick(0, 14))}:${two(pick(0, 3) * 15)}`][pick(0, 2)]!;
        // SQLite reads the same forms (T or a space, Z or ±HH:MM); the fraction is compared on its own below.
        const written = `${String(year).padStart(4, "0")}-${two(month)}-${two(day)}${random() < 0.5 ? "T" : " "}${clock}${zone}`;
        const fraction = clock.length === 8 && random() < 0.5 ? `.${String(pick(0, 999_999)).padStart(6, "0")}` : "";
        const withFraction = zone === "" ? written + fraction : written.replace(zone, fraction + zone);
        const stored = toSqlValue("TIMESTAMP", withFraction) as string;
        const [[sqlite, epoch]] = db.exec("SELECT strftime('%Y-%m-%d %H:%M:%S', ?), unixepoch(?)", [
          written,
          written,
        ])[0]!.values as [[string, number]];
        expect([withFraction, stored.slice(0, 19)]).toEqual([withFraction, sqlite]);
        expect([withFraction, stored.slice(19)]).toEqual([withFraction, fraction.replace(/\.?0+$/, "")]);
        expect(isStoredTimestamp(stored)).toBe(true);
        instants.push([stored, epoch + Number(`0${fraction}`)]);
      }
      const byText = [...instants].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      const byTime = [...instants].sort(([, a], [, b]) => a - b);
      expect(byText.map(([, epoch]) => epoch)).toEqual(byTime.map(([, epoch]) => epoch));
    } finally {
      db.close();
    }
  });
});

describe("isStoredTimestamp", () => {
  it("should accept only the stored form: a space, seconds, no zone, no trailing zero in the fraction", () => {
    for (const text of ["2024-01-31 13:45:07", "2024-01-31 13:45:07.5", "2024-01-31 13:45:07.000000001"])
      expect([text, isStoredTimestamp(text)]).toEqual([text, true]);
    for (const text of [
      "2024-01-31T13:45:07",
      "2024-01-31 13:45",
      "2024-01-31 13:45:07Z",
      "2024-01-31 13:45:07+01:00",
      "2024-01-31 13:45:07.50",
      "2024-01-31 13:45:07.",
      "2024-02-30 13:45:07",
    ])
      expect([text, isStoredTimestamp(text)]).toEqual([text, false]);
  });
});

describe("type inference", () => {
  it("should prefer INTEGER for a column of 1 and 0", () => {
    expect(inferColumn(["1", "0", "1"])).toBe("INTEGER");
  });

  it("should pick BOOLEAN when true/false appear among 1 and 0", () => {
    expect(inferColumn(["1", "0", "TRUE", "false"])).toBe("BOOLEAN");
  });

  it("should widen INTEGER to DOUBLE", () => {
    expect(inferColumn(["1", "2.5", "-3"])).toBe("DOUBLE");
    expect(inferColumn(["1", "9223372036854775808"])).toBe("DOUBLE");
  });

  it("should pick DATE and TIMESTAMP, but STRING when both are mixed", () => {
    expect(inferColumn(["2024-01-01", "2024-02-29"])).toBe("DATE");
    expect(inferColumn(["2024-01-01T00:00:00Z", "2024-01-01 12:00"])).toBe("TIMESTAMP");
    expect(inferColumn(["2024-01-01", "2024-01-01T00:00:00Z"])).toBe("STRING");
  });

  it("should fall back to STRING when any value fits nothing narrower", () => {
    expect(inferColumn(["1", "2", "three"])).toBe("STRING");
    expect(inferColumn(["1", "true", "2"])).toBe("STRING");
    expect(inferColumn(["2024-02-30"])).toBe("STRING");
  });

  it("should ignore empty fields, and give STRING to a column with no values", () => {
    expect(inferColumn(["", "5", ""])).toBe("INTEGER");
    expect(inferColumn(["", "", ""])).toBe("STRING");
    expect(inferColumn([])).toBe("STRING");
  });

  it("should keep numbers with a leading zero as STRING so codes keep their zeros", () => {
    expect(inferColumn(["02134", "90210"])).toBe("STRING");
    expect(inferColumn(["-01.5"])).toBe("STRING");
    expect(inferColumn(["0", "0.5", "-0.25", "0e3"])).toBe("DOUBLE");
  });
});

/** Texts around the edges of every sure pattern: digits, signs, dates and times near their limits, zones, words. */
function sureEdgeTexts(): string[] {
  const texts = [
    ...randomTexts(4, 20000, "0123456789+-.eE", 24),
    ...randomTexts(5, 20000, "0129-:T Z+.", 30),
    ...randomTexts(6, 5000, "trueTRUEfalsFALS01", 6),
    "9".repeat(18),
    "9".repeat(19),
    `-${"9".repeat(18)}`,
    `0${"9".repeat(17)}`,
    `${"9".repeat(18)}.${"9".repeat(30)}e99`,
    "1e999",
    ".5",
    "1.",
    ".",
    "-0",
    "+0",
    "00",
    "0.0",
  ];
  const two = (n: number) => String(n).padStart(2, "0");
  for (const year of ["2023", "2024", "1900", "2000", "0000", "0004"])
    for (let month = 0; month <= 13; month++)
      for (let day = 0; day <= 32; day++) texts.push(`${year}-${two(month)}-${two(day)}`);
  for (let hour = 0; hour <= 25; hour++)
    for (const minute of [0, 59, 60])
      for (const rest of ["", ":00", ":59", ":60", ":5", ":00.1", ":00.123456789", ":00.1234567890", ".5"])
        for (const zone of ["", "Z", "+00", "-23", "+24", "+0530", "+05:30", "+05:60", "+5", "z", "Z0"])
          texts.push(`2024-02-29${hour % 2 ? "T" : " "}${two(hour)}:${two(minute)}${rest}${zone}`);
  return texts;
}

/** The candidate sets inference leaves that have a sure pattern of their own. */
const SURE_CANDIDATE_SETS = [
  INFER_INTEGER | INFER_DOUBLE | INFER_BOOLEAN,
  INFER_INTEGER | INFER_DOUBLE,
  INFER_DOUBLE,
  INFER_BOOLEAN,
  INFER_DATE,
  INFER_TIMESTAMP,
];

describe("sure patterns (the whole-row fast path's)", () => {
  const texts = sureEdgeTexts();
  const whole = (pattern: string) => new RegExp(`^(?:${pattern})$`);

  it.each(DATA_TYPES.filter((type) => type !== "STRING"))("should match only texts %s accepts", (type) => {
    const pattern = whole(surePattern(type)!);
    let matched = 0;
    for (const text of texts) {
      if (!pattern.test(text)) continue;
      matched++;
      expect([text, valueCheck(type)(charCodes(text), 0, text.length)]).toEqual([text, true]);
    }
    expect(matched).toBeGreaterThan(50);
  });

  it("should have no pattern for STRING, which takes any text", () => {
    expect(surePattern("STRING")).toBeNull();
  });

  it.each(SURE_CANDIDATE_SETS)("should match only texts that leave the candidates %i as they are", (candidates) => {
    const pattern = whole(sureCandidatesPattern(candidates)!);
    let matched = 0;
    for (const text of texts) {
      if (!pattern.test(text)) continue;
      matched++;
      expect([text, narrowCandidates(candidates, charCodes(text))]).toEqual([text, candidates]);
    }
    expect(matched).toBeGreaterThan(1);
  });

  it("should never match a character outside SURE_PATTERN_CHARACTERS, which a delimiter must not be", () => {
    // A delimiter a value could hold would be read as part of the value; the row regex is refused for delimiters in
    // that list, so the list must name every character any pattern can match.
    const patterns = [
      ...DATA_TYPES.flatMap((type) => surePattern(type) ?? []),
      ...SURE_CANDIDATE_SETS.map((candidates) => sureCandidatesPattern(candidates)!),
    ].map(whole);
    const outside = [
      ...Array.from({ length: 0x80 }, (_, code) => String.fromCharCode(code)),
      "\u00a0",
      "é",
      "\u2028",
    ].filter((character) => !SURE_PATTERN_CHARACTERS.test(character));
    const matchedOutside: string[] = [];
    let tried = 0;
    for (const pattern of patterns) {
      const matching = texts.filter((text) => pattern.test(text));
      expect(matching.length).toBeGreaterThan(0);
      for (const text of matching.slice(0, 12))
        for (let at = 0; at <= text.length; at++)
          for (const character of outside) {
            const inserted = text.slice(0, at) + character + text.slice(at);
            const replaced = text.slice(0, at) + character + text.slice(at + 1);
            if (pattern.test(inserted)) matchedOutside.push(inserted);
            if (at < text.length && pattern.test(replaced)) matchedOutside.push(replaced);
            tried++;
          }
    }
    expect(matchedOutside).toEqual([]);
    expect(tried).toBeGreaterThan(10_000);
  });

  it("should match every date and leap day that exists", () => {
    const pattern = whole(surePattern("DATE")!);
    for (const text of texts.filter((text) => text.length === 10 && text[4] === "-"))
      expect([text, pattern.test(text)]).toEqual([text, dateCheck(charCodes(text))]);
  });
});

/**
 * Test helpers: CSV texts shaped to make a reader do the most work per
 * character (each of about `size` characters), and a seeded generator.
 */

/** A text of about `size` characters made of `unit` repeated, after `head`. */
function repeated(head: string, unit: string, size: number): string {
  return head + unit.repeat(Math.max(1, Math.floor((size - head.length) / unit.length)));
}

/** The shapes, by name; each makes a text of about `size` characters. */
export const ADVERSARIAL_SHAPES: Record<string, (size: number) => string> = {
  "one column": (size) => repeated("a\n", "1\n", size),
  "one column, CRLF": (size) => repeated("a\r\n", "1\r\n", size),
  "a row per byte": (size) => repeated("a\n", "\n", size),
  "very long rows": (size) => repeated("a\n", `${"x".repeat(Math.floor(size / 8))}\n`, size),
  "very wide rows": (size) => repeated("a\n", `${"1,".repeat(Math.floor(size / 16))}1\n`, size),
  "only delimiters": (size) => repeated("a\n", ",", size),
  "no line break": (size) => "x".repeat(size),
  "all quoted": (size) => repeated("a\n", '"1"\n', size),
  "all quoted, two columns": (size) => repeated("a,b\n", '"1","2"\n', size),
  "quote heavy": (size) => repeated("a\n", '""""""\n', size),
  "escaped quotes in one field": (size) => `a\n"${'""'.repeat(Math.floor(size / 2))}"\n`,
  "huge field": (size) => `a\n"${"x".repeat(size)}"\n`,
  "huge field with line breaks": (size) => `a\n"${"x\n".repeat(Math.floor(size / 2))}"\n`,
  "CR only": (size) => repeated("a\r", "1\r", size),
  "CR only, quoted": (size) => repeated("a\r", '"1"\r', size),
  "CRLF rows in an LF file": (size) => repeated("a\n", "1\r\n", size),
  "a quote inside every unquoted field": (size) => repeated("a\n", '1"\n', size),
  "stray quotes before spaces": (size) =>
    `a\n"${'a"x'.repeat(Math.floor(size / 6))}${" ".repeat(Math.floor(size / 2))}\n`,
  "stray quotes before spaces, then a delimiter": (size) =>
    `a,b\n"${'a"x'.repeat(Math.floor(size / 6))}${" ".repeat(Math.floor(size / 2))},1\n`,
  "closing quotes followed by spaces": (size) => repeated("a,b\n", '"1"   ,"2"   \n', size),
  "unclosed quote": (size) => repeated('a\n"', "x\n", size),
  "malformed rows after blank lines": (size) =>
    `a\n1\n${"\n".repeat(Math.floor(size / 2))}${'"1"x\n'.repeat(Math.floor(size / 10))}`,
  "plain rows between unusual ones": (size) => repeated("a,b\n", "1,2\n3,4\n5,6\n7,8\n9,1\n" + '1",2\n', size),
};

/** Seeded, so a failure names an input that can be replayed. */
export function seeded(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  return {
    next,
    /** A whole number from 0 to `below` - 1. */
    below: (below: number) => Math.floor(next() * below),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}

/** CSV-ish text: tokens, adversarial shapes, long runs of one token, all mixed. */
export function fuzzText(random: ReturnType<typeof seeded>, delimiter: string): string {
  const newline = random.pick(["\n", "\r\n", "\r"]);
  const tokens = ["a", "12", "-3.5", "true", "2024-01-02", delimiter, delimiter, '"', '""', newline, newline, " "];
  const rare = ["\r", "\n", "\t", "\u00a0", "\u3000", "é", "😀", "\ufeff", ",", ";", '" ', ' "'];
  const parts: string[] = [];
  const count = random.below(12);
  for (let i = 0; i < count; i++) {
    const kind = random.next();
    if (kind < 0.5) {
      let text = "";
      for (let k = random.below(40); k > 0; k--) text += random.next() < 0.9 ? random.pick(tokens) : random.pick(rare);
      parts.push(text);
    } else if (kind < 0.8) {
      parts.push(random.pick(Object.values(ADVERSARIAL_SHAPES))(random.below(4000)));
    } else {
      parts.push(random.pick([...tokens, ...rare]).repeat(random.below(3000)));
    }
  }
  return parts.join("");
}

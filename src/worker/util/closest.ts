import { distance } from "fastest-levenshtein";

/** Parts longer than this are not compared: a suggestion is for a name a person typed. */
const MOST_PART_CHARS = 256;
/** A name is a prefix of another (`temp` of `temp_max`) only from this many characters on. */
const MIN_PREFIX_CHARS = 3;

/**
 * The candidates closest to a name that was not found, for a "did you mean":
 * compared part by part (`[account, dataset, data]`, or `[column]`), letter
 * case ignored, a candidate is close when each part that differs is at most a
 * third of its length in edits (Levenshtein) away, or when only the last part
 * differs and one starts with the other. Fewest edits first, at most `most`. Each
 * candidate costs at most a few MOST_PART_CHARS² / 32 steps: the caller
 * bounds how many there are.
 */
export function closest<T>(
  written: readonly string[],
  candidates: Iterable<T>,
  partsOf: (candidate: T) => readonly string[],
  most = 3,
): T[] {
  if (written.some((part) => part.length > MOST_PART_CHARS)) return [];
  const target = written.map((part) => part.toLowerCase());
  const near: { candidate: T; edits: number; key: string }[] = [];
  for (const candidate of candidates) {
    const parts = partsOf(candidate);
    if (parts.length !== target.length || parts.some((part) => part.length > MOST_PART_CHARS)) continue;
    if (parts.every((part, i) => part === written[i])) continue;
    let edits = 0;
    let within = true;
    let differing = 0;
    let last = -1;
    parts.forEach((part, i) => {
      const lower = part.toLowerCase();
      if (lower === target[i]) return;
      const partEdits = distance(lower, target[i]!);
      edits += partEdits;
      within &&= partEdits <= Math.max(1, Math.floor(Math.max(lower.length, target[i]!.length) / 3));
      differing++;
      last = i;
    });
    const end = target.length - 1;
    const lower = parts[end]!.toLowerCase();
    const shorter = Math.min(lower.length, target[end]!.length);
    const prefix =
      differing === 1 &&
      last === end &&
      shorter >= MIN_PREFIX_CHARS &&
      (lower.startsWith(target[end]!) || target[end]!.startsWith(lower));
    if (within || prefix) near.push({ candidate, edits, key: parts.join(".") });
  }
  near.sort((a, b) => a.edits - b.edits || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return near.slice(0, most).map((entry) => entry.candidate);
}

/** " Did you mean a, b or c?" for the names given (already written as the user would write them); "" for none. */
export function didYouMean(names: readonly string[]): string {
  if (names.length === 0) return "";
  const list = names.length === 1 ? names[0]! : `${names.slice(0, -1).join(", ")} or ${names.at(-1)!}`;
  return ` Did you mean ${list}?`;
}

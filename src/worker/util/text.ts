/** "1 row", "2 rows": a count and its noun, for messages a person reads. */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

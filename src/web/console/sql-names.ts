/** A name part as SQL needs it: bare when it is a plain identifier, else in backticks (docs/api.md). */
export function sqlPart(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `\`${name.replace(/`/g, "``")}\``;
}

/** A data item's three-part name in SQL: account.dataset.item. */
export function sqlName(account: string, dataset: string, item: string): string {
  return [account, dataset, item].map(sqlPart).join(".");
}

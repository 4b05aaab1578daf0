/** Account and dataset names: 1-64 characters of A-Z a-z 0-9 _ - (docs/api.md). */
export const ACCOUNT_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const DATASET_NAME_PATTERN = ACCOUNT_NAME_PATTERN;
/** Data names: 1-128 characters of A-Z a-z 0-9 _ - . not starting with a dot. */
export const DATA_NAME_PATTERN = /^(?!\.)[A-Za-z0-9_.-]{1,128}$/;

export const ACCOUNT_NAME_RULE = "1-64 characters of A-Z, a-z, 0-9, '_' and '-'";
export const DATA_NAME_RULE = "1-128 characters of A-Z, a-z, 0-9, '_', '-' and '.', not starting with '.'";

export function isAccountName(name: string): boolean {
  return ACCOUNT_NAME_PATTERN.test(name);
}

export function isDatasetName(name: string): boolean {
  return DATASET_NAME_PATTERN.test(name);
}

export function isDataName(name: string): boolean {
  return DATA_NAME_PATTERN.test(name);
}

/** Turns any text into a valid account name: invalid characters become '-', length is capped. */
export function sanitizeAccountName(raw: string): string {
  const cleaned = raw
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
  return cleaned || "user";
}

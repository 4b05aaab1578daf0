import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

/** A message in a box: an error says what went wrong and what to do; it is announced to screen readers. */
export function Notice(props: { kind: "error" | "info" | "success"; children: ComponentChildren }) {
  return (
    <div class={`notice ${props.kind}`} role={props.kind === "error" ? "alert" : "status"}>
      {props.children}
    </div>
  );
}

/** What an empty list shows: what is missing and what to do next. */
export function Empty(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{props.title}</p>
      {props.children && <p>{props.children}</p>}
    </div>
  );
}

/** A page's heading, focused when the page opens so keyboard and screen-reader users start there. */
export function PageTitle(props: { children: ComponentChildren; actions?: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  return (
    <div class="page-title">
      <h1 tabIndex={-1} ref={heading}>
        {props.children}
      </h1>
      {props.actions && <div class="page-actions">{props.actions}</div>}
    </div>
  );
}

export function Spinner(props: { label: string }) {
  return (
    <span class="spinner" role="status">
      <span class="spinner-dot" aria-hidden="true" />
      {props.label}
    </span>
  );
}

let flashed: string | null = null;

/** A success message for the next page to show (as after deleting an item, whose page closes). */
export function flash(message: string): void {
  flashed = message;
}

/** The message left for this page, once. */
export function takeFlash(): string | null {
  const message = flashed;
  flashed = null;
  return message;
}

/** The message of anything thrown, for a notice. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A module loaded on first use (the SQL editor, the chart: most of the
 * bundle's weight), so the other pages start without them; null until loaded.
 */
export function useLazy<T>(load: () => Promise<T>, when = true): T | null {
  const [module, setModule] = useState<T | null>(null);
  useEffect(() => {
    if (when && !module) void load().then(setModule);
  }, [when]);
  return module;
}

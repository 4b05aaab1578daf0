import { useEffect, useState } from "preact/hooks";

/**
 * Where the console is: the part of the URL after `#`, split into its
 * segments (each decoded). Hash routes need no server support: every view is
 * /console/ itself, a static file.
 */
export type Route =
  | { view: "datasets" }
  | { view: "dataset"; account: string; dataset: string }
  | { view: "item"; account: string; dataset: string; item: string }
  | { view: "sql" }
  | { view: "history" };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "sql") return { view: "sql" };
  if (parts[0] === "history") return { view: "history" };
  if (parts[0] === "d" && parts.length === 3) return { view: "dataset", account: parts[1]!, dataset: parts[2]! };
  if (parts[0] === "d" && parts.length === 4)
    return { view: "item", account: parts[1]!, dataset: parts[2]!, item: parts[3]! };
  return { view: "datasets" };
}

/** The href of a route. */
export function href(route: Route): string {
  const enc = encodeURIComponent;
  switch (route.view) {
    case "datasets":
      return "#/";
    case "sql":
      return "#/sql";
    case "history":
      return "#/history";
    case "dataset":
      return `#/d/${enc(route.account)}/${enc(route.dataset)}`;
    case "item":
      return `#/d/${enc(route.account)}/${enc(route.dataset)}/${enc(route.item)}`;
  }
}

export function navigate(route: Route): void {
  location.hash = href(route);
}

/** The current route, following the address bar. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", update);
    return () => removeEventListener("hashchange", update);
  }, []);
  return route;
}

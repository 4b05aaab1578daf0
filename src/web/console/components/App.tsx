import { createContext } from "preact";
import { useCallback, useContext, useEffect, useState } from "preact/hooks";
import { api, currentAccount, ok, onSignedOut, signOut, type CatalogEntry } from "../api";
import { href, useRoute, type Route } from "../route";
import { DatasetPage } from "./DatasetPage";
import { DatasetsPage } from "./DatasetsPage";
import { HistoryPage } from "./HistoryPage";
import { ItemPage } from "./ItemPage";
import { SqlPage } from "./SqlPage";
import { messageOf, Notice, Spinner } from "./ui";

/** The signed-in account and the datasets it sees, shared by every page. */
export interface Session {
  account: string;
  catalog: CatalogEntry[] | null;
  catalogError: string | null;
  refreshCatalog(): Promise<void>;
}

const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error("useSession outside the signed-in console");
  return session;
}

export function App() {
  const [account, setAccount] = useState<string | null | undefined>(undefined);
  const [ended, setEnded] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    onSignedOut((message) => {
      setEnded(message);
      setAccount(null);
    });
    currentAccount().then(setAccount, (error) => setProblem(messageOf(error)));
  }, []);

  if (problem) return <Notice kind="error">{problem}</Notice>;
  if (account === undefined) return <Spinner label="Loading the console…" />;
  if (account === null) return <SignIn ended={ended} />;
  return (
    <Shell
      account={account}
      onSignOut={async () => {
        await signOut();
        setEnded(null);
        setAccount(null);
      }}
    />
  );
}

function SignIn(props: { ended: string | null }) {
  // The frame of the service's own sign-in pages (src/worker/http/pages/layout.ts), which this one leads to.
  return (
    <>
      <header class="top">
        <span class="brand">dqs</span>
      </header>
      <main class="page-card">
        <h1>dqs console</h1>
        <p class="lead">Upload a CSV, look at it, ask it questions in SQL, chart the answer and share it.</p>
        {props.ended && <Notice kind="info">{props.ended}</Notice>}
        <p>
          <a class="button" href="/console/sign-in">
            Sign in
          </a>
        </p>
        <p class="muted">
          You sign in with the service's own login. The console keeps your session in a cookie only this site can read;
          no token is stored in the browser. Programs use the <a href="/v1/docs">API</a> with bearer tokens instead.
        </p>
      </main>
    </>
  );
}

const NAV: [Route["view"], string, Route][] = [
  ["datasets", "Datasets", { view: "datasets" }],
  ["sql", "SQL", { view: "sql" }],
  ["history", "History", { view: "history" }],
];

function Shell(props: { account: string; onSignOut: () => Promise<void> }) {
  const route = useRoute();
  const [catalog, setCatalog] = useState<CatalogEntry[] | null>(null);
  const [catalogError, setCatalogError] = useState<string | null>(null);
  const [signOutError, setSignOutError] = useState<string | null>(null);

  const refreshCatalog = useCallback(async () => {
    try {
      const body = await ok(api.GET("/me/catalog"));
      setCatalog(body.Data.DatasetList);
      setCatalogError(null);
    } catch (error) {
      setCatalogError(messageOf(error));
    }
  }, []);
  useEffect(() => void refreshCatalog(), [refreshCatalog]);

  const session: Session = { account: props.account, catalog, catalogError, refreshCatalog };
  const section = route.view === "dataset" || route.view === "item" ? "datasets" : route.view;
  return (
    <SessionContext.Provider value={session}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href({ view: "datasets" })}>
          dqs
        </a>
        <nav aria-label="Console">
          {NAV.map(([view, label, target]) => (
            <a key={view} href={href(target)} aria-current={section === view ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <div class="who">
          <span class="account" title="Signed in as">
            {props.account}
          </span>
          <button
            type="button"
            class="link"
            onClick={() => props.onSignOut().catch((error) => setSignOutError(messageOf(error)))}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" class={`view-${route.view}`}>
        {signOutError && <Notice kind="error">{signOutError}</Notice>}
        <Page route={route} />
      </main>
    </SessionContext.Provider>
  );
}

function Page(props: { route: Route }) {
  const route = props.route;
  switch (route.view) {
    case "datasets":
      return <DatasetsPage />;
    case "dataset":
      return <DatasetPage key={`${route.account}/${route.dataset}`} account={route.account} dataset={route.dataset} />;
    case "item":
      return (
        <ItemPage
          key={`${route.account}/${route.dataset}/${route.item}`}
          account={route.account}
          dataset={route.dataset}
          item={route.item}
        />
      );
    case "sql":
      return <SqlPage />;
    case "history":
      return <HistoryPage />;
  }
}

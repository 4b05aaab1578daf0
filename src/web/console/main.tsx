import { render } from "preact";
import { App } from "./components/App";
import "./console.css";

const root = document.getElementById("app")!;
// The static page's "Loading…" line goes; Preact renders into an empty element.
root.replaceChildren();
render(<App />, root);

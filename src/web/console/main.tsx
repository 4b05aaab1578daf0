import { render } from "preact";
import { App } from "./components/App";
import "./console.css";

render(<App />, document.getElementById("app")!);

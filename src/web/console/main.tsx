import { render } from "preact";
import "./console.css";

render(<p>dqs console</p>, document.getElementById("app")!);

// Files imported `with { type: "text" }` are bundled as their text (esbuild's text loader; vite's `?raw` in tests).

declare module "*.css" {
  const text: string;
  export default text;
}

declare module "swagger-ui-dist/swagger-ui-bundle.js" {
  const text: string;
  export default text;
}

declare module "*/copy-buttons.js" {
  const text: string;
  export default text;
}

// busboy loads `require("streamsearch")` and calls `new StreamSearch(needle, callback)`;
// wrangler.toml's [alias] points that name here, so the bundle uses BoundarySearch instead.
module.exports = require("./boundary-search.ts").BoundarySearch;

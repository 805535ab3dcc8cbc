// Stands in for whatwg-url in the bundles (scripts/bundle.mjs): node-fetch 2 reads its URL
// class only where Node has none, and Node 20 has one.
export const URL = globalThis.URL;
export default { URL };

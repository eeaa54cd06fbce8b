// The few browser globals the app's modules touch when they load (the
// router listens to popstate; drafts use sessionStorage), for component
// tests rendered to markup in Node. Imported first by such a test.
const memory = new Map<string, string>();
const g = globalThis as Record<string, unknown>;
g.window ??= { addEventListener: () => {}, removeEventListener: () => {}, setTimeout, clearTimeout, confirm: () => true };
g.location ??= { pathname: "/", search: "" };
g.history ??= { pushState: () => {}, replaceState: () => {}, back: () => {} };
g.sessionStorage ??= { getItem: (k: string) => memory.get(k) ?? null, setItem: (k: string, v: string) => void memory.set(k, v), removeItem: (k: string) => void memory.delete(k) };
export {};

import { createContext, useContext, useState, type ReactNode } from "react";
import type { Me } from "../wire";
import { ApiError } from "./api";
import { navigate } from "./router";

export const MeContext = createContext<Me | null>(null);
/**
 * Whether the broker answers (GET /api/version's live probe, every 10 s):
 * null until known. Every page reads it, so a number that comes from the
 * broker reads "unknown" while it is down, never "none" or 0.
 */
export const BrokerContext = createContext<boolean | null>(null);
export const useBrokerUp = () => useContext(BrokerContext);
/** An unknown live value, said as such. */
export function Unknown({ why = "the broker is not answering" }: { why?: string }) {
  return <span className="muted" title={why} data-testid="unknown">unknown</span>;
}
export const useMe = () => useContext(MeContext);
/** Write controls are rendered for admins only; the server refuses viewers anyway. */
export const useCanWrite = () => useContext(MeContext)?.role === "admin";

export const fmt = (n: number | null | undefined, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n) ? "—" : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
export const pct = (n: number | null | undefined) => (n === null || n === undefined ? "—" : `${(n * 100).toFixed(n < 0.1 ? 1 : 0)}%`);
// Times carry their time zone and a relative form: "2026-12-02 11:14:03 UTC (3 min ago)".
const stamp = new Intl.DateTimeFormat("en-CA", { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false, timeZoneName: "short" });
export function absolute(ms: number): string {
  const p = Object.fromEntries(stamp.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour === "24" ? "00" : p.hour}:${p.minute}:${p.second} ${p.timeZoneName ?? ""}`.trim();
}
const rel = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
/** "3 min ago", "in 40 s" relative to now. */
export function ago(ms: number, now = Date.now()): string {
  const d = (ms - now) / 1000, a = Math.abs(d);
  if (a < 45) return rel.format(Math.round(d), "second");
  if (a < 2700) return rel.format(Math.round(d / 60), "minute");
  if (a < 64800) return rel.format(Math.round(d / 3600), "hour");
  return rel.format(Math.round(d / 86400), "day");
}
export const when = (ms: number | null | undefined) => (ms ? `${absolute(ms)} (${ago(ms)})` : "—");
/** A time as an element: the full stamp, machine-readable. */
export function Time({ ms }: { ms: number | null | undefined }) {
  return ms ? <time dateTime={new Date(ms).toISOString()} title={new Date(ms).toISOString()}>{when(ms)}</time> : <>—</>;
}
export const clock = (ms: number) => new Date(ms).toLocaleTimeString("en-GB", { hour12: false, hour: "2-digit", minute: "2-digit" });
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds > 0 && seconds < 1) return `${fmt(seconds * 1000, 1)} ms`;
  if (seconds < 120) return `${fmt(seconds, 3)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${(seconds / 3600).toFixed(seconds % 3600 ? 1 : 0)} h`;
  return `${(seconds / 86400).toFixed(seconds % 86400 ? 1 : 0)} days`;
}
export const windowText = (count: number, timeMs: number) => `${fmt(count)} per ${duration(timeMs / 1000)}`;

export function Link({ to, children, className, ...rest }: { to: string; children: ReactNode; className?: string; "aria-current"?: "page" | undefined; "aria-label"?: string }) {
  return (
    <a href={to} className={className} {...rest}
      onClick={(e) => { if (e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey) { e.preventDefault(); navigate(to); } }}>
      {children}
    </a>
  );
}

export function Stat({ label, value, hint, testid }: { label: string; value: ReactNode; hint?: ReactNode; testid?: string }) {
  return (
    <div className="card stat" data-testid={testid}>
      <div className="label">{label}</div>
      <div className="value">{value}</div>
      {hint ? <div className="hint">{hint}</div> : null}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return <div className="empty" role="status"><strong>{title}</strong>{children}</div>;
}

export function Loading() { return <div className="empty" role="status" aria-busy="true">Loading…</div>; }

/** The server's own words for a failure, with what it means for this page. */
export function ErrorState({ error, what }: { error: ApiError; what: string }) {
  let title = `Could not load ${what}`;
  let hint = "";
  if (error.status === 0) { title = "The console server is not answering"; hint = "Check that gate-console is running; this page retries on its own."; }
  else if (error.status === 401) { title = "Sign in required"; hint = "Your session has ended."; }
  else if (error.status === 403) { title = "Not allowed"; }
  else if (error.status === 404 && error.missing) { title = `This server does not serve ${what} yet`; hint = "The route is served by a newer gate-console build."; }
  else if (error.status === 503) { title = `${what[0].toUpperCase()}${what.slice(1)} is not available`; hint = "This needs PostgreSQL history (PG_HOST) or a running relay."; }
  else if (error.status === 502) { title = "The broker or history database failed"; }
  return (
    <div className="notice bad" role="alert" data-testid="error-state">
      <strong>{title}</strong> <span className="muted small">(HTTP {error.status || "—"})</span>
      <div>{error.message}</div>
      {hint ? <div className="muted small">{hint}</div> : null}
      {error.status === 401 ? <a href={`/api/auth/google/login?next=${encodeURIComponent(location.pathname + location.search)}`}>Sign in</a> : null}
    </div>
  );
}

export function BudgetBar({ value }: { value: number | null }) {
  if (value === null) return <span className="muted">—</span>;
  const w = Math.max(0, Math.min(1, value));
  return (
    <div className="budgetbar" role="meter" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(value * 100)} aria-label="utilisation">
      <div className={value >= 1 ? "full" : ""} style={{ width: `${w * 100}%` }} />
    </div>
  );
}

/** "1 target", "2 targets". */
export const plural = (n: number, one: string, many = `${one}s`) => `${fmt(n)} ${n === 1 ? one : many}`;

/** Copy a snippet, a queue name or a key; says "Copied" for a moment. */
export function CopyButton({ text, what = "" }: { text: string | null | undefined; what?: string }) {
  const [done, setDone] = useState<"" | "ok" | "failed">("");
  if (!text) return null;
  const copy = () => {
    navigator.clipboard.writeText(text).then(() => setDone("ok"), () => setDone("failed")).finally(() => window.setTimeout(() => setDone(""), 1500));
  };
  return (
    <button type="button" className="copy" onClick={copy} aria-label={`Copy${what ? ` ${what}` : ""}`} data-testid="copy">
      {done === "ok" ? "Copied" : done === "failed" ? "Copy failed" : "Copy"}
    </button>
  );
}

/** A code snippet with its copy button. */
export function Snippet({ text, testid }: { text: string; testid?: string }) {
  return <div className="snippet"><CopyButton text={text} what="snippet" /><pre data-testid={testid}>{text}</pre></div>;
}

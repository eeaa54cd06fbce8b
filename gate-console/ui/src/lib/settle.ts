import type { SettleStats } from "../wire";

/** How good a node's cost estimates are, from the settles workers reported. */
export interface EstimateQuality {
  /** The headline: "calls cost 25% of their estimate" or why there is none. */
  headline: string;
  /** A hint when the estimates are far off (the budget is under-used or over-charged). */
  hint: string | null;
  /** "good", "over" (estimates too high), "under" (too low) or "none". */
  tone: "good" | "over" | "under" | "none";
}

/** estimateQuality reads a node's settle statistics into a sentence. */
export function estimateQuality(s: SettleStats | null | undefined): EstimateQuality {
  if (!s || s.settles === 0) {
    return { headline: "No settles reported: Gate charges the estimate and never learns the actual cost.", hint: null, tone: "none" };
  }
  if (s.estimated <= 0) {
    return { headline: `${s.settles} settles, nothing estimated.`, hint: null, tone: "none" };
  }
  const pctOf = Math.round(s.ratio * 100);
  const headline = `Calls cost ${pctOf}% of their estimate on average (${s.actual.toLocaleString("en-US")} of ${s.estimated.toLocaleString("en-US")} over ${s.settles.toLocaleString("en-US")} settles).`;
  if (s.ratio < 0.8) {
    return { headline, tone: "over", hint: "Estimates are high: settles give the difference back while the window lives; a closer estimate (a lower default or max_tokens) admits more at once." };
  }
  if (s.ratio > 1.1) {
    return { headline, tone: "under", hint: "Estimates are low: each settle charges the difference to the current window as a debt, and later items wait for it. Raise the estimate." };
  }
  return { headline, tone: "good", hint: null };
}

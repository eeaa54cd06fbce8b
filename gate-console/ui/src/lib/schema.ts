// A JSON Schema (draft 2020-12) checker for the keywords libs/schema's graph
// schema uses. It runs in the browser without eval (the console's CSP
// forbids it), and reports each problem at the JSON pointer it concerns.
import graphSchema from "../../../../libs/schema/graph.schema.json";

type S = Record<string, unknown> | boolean;
export interface SchemaProblem { at: string; message: string }

const esc = (k: string) => k.replace(/~/g, "~0").replace(/\//g, "~1");
const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v);

export class Validator {
  constructor(private root: Record<string, unknown>) {}

  validate(v: unknown): SchemaProblem[] {
    const out: SchemaProblem[] = [];
    this.check(this.root, v, "", out);
    return out;
  }

  private resolve(ref: string): S {
    if (!ref.startsWith("#/")) throw new Error(`unsupported $ref ${ref}`);
    let cur: unknown = this.root;
    for (const p of ref.slice(2).split("/")) cur = (cur as Record<string, unknown>)[p];
    return cur as S;
  }

  private ok(s: S, v: unknown, at: string): boolean {
    const tmp: SchemaProblem[] = [];
    this.check(s, v, at, tmp);
    return tmp.length === 0;
  }

  private check(s: S, v: unknown, at: string, out: SchemaProblem[]): void {
    if (s === true) return;
    if (s === false) { out.push({ at, message: "is not allowed here" }); return; }
    const k = kind(v);
    if (typeof s.$ref === "string") this.check(this.resolve(s.$ref), v, at, out);
    if (typeof s.type === "string") {
      const t = s.type;
      const match = t === k || (t === "number" && (k === "integer" || k === "number")) || (t === "integer" && k === "integer");
      if (!match) { out.push({ at, message: `must be ${t === "integer" ? "a whole number" : t === "object" ? "an object" : t === "array" ? "an array" : "a " + t}` }); return; }
    }
    if ("const" in s && v !== s.const) out.push({ at, message: `must be ${JSON.stringify(s.const)}` });
    if (Array.isArray(s.enum) && !s.enum.includes(v)) out.push({ at, message: `must be one of ${s.enum.map((e) => JSON.stringify(e)).join(", ")}` });
    if (typeof v === "number") {
      if (typeof s.minimum === "number" && v < s.minimum) out.push({ at, message: `must be at least ${s.minimum}` });
      if (typeof s.maximum === "number" && v > s.maximum) out.push({ at, message: `must be at most ${s.maximum}` });
      if (typeof s.exclusiveMinimum === "number" && v <= s.exclusiveMinimum) out.push({ at, message: `must be more than ${s.exclusiveMinimum}` });
    }
    if (typeof v === "string") {
      if (typeof s.minLength === "number" && v.length < s.minLength) out.push({ at, message: s.minLength === 1 ? "must not be empty" : `must be at least ${s.minLength} characters` });
      if (typeof s.pattern === "string" && v === "" && !new RegExp(s.pattern, "u").test(v)) out.push({ at, message: "is required" });
      else if (typeof s.pattern === "string" && !new RegExp(s.pattern, "u").test(v)) out.push({ at, message: `${JSON.stringify(v)} does not match ${s.pattern}` + (typeof s.description === "string" ? ` (${s.description})` : "") });
    }
    if (k === "object") {
      const o = v as Record<string, unknown>;
      const props = (s.properties ?? {}) as Record<string, S>;
      for (const r of (s.required as string[] | undefined) ?? []) if (!(r in o)) out.push({ at: `${at}/${esc(r)}`, message: "is required" });
      if (typeof s.maxProperties === "number" && Object.keys(o).length > s.maxProperties) out.push({ at, message: `has more than ${s.maxProperties} entries` });
      if (typeof s.minProperties === "number" && Object.keys(o).length < s.minProperties) out.push({ at, message: `needs at least ${s.minProperties} entr${s.minProperties === 1 ? "y" : "ies"}` });
      for (const [key, val] of Object.entries(o)) {
        const here = `${at}/${esc(key)}`;
        if (s.propertyNames !== undefined) {
          const tmp: SchemaProblem[] = [];
          this.check(s.propertyNames as S, key, here, tmp);
          for (const p of tmp) out.push({ at: here, message: `name ${p.message}` });
        }
        if (key in props) this.check(props[key], val, here, out);
        else if (s.additionalProperties !== undefined) {
          if (s.additionalProperties === false) out.push({ at: here, message: `unknown field "${key}"` });
          else this.check(s.additionalProperties as S, val, here, out);
        }
      }
    }
    if (k === "array") {
      const a = v as unknown[];
      if (typeof s.minItems === "number" && a.length < s.minItems) out.push({ at, message: `needs at least ${s.minItems} item${s.minItems === 1 ? "" : "s"}` });
      if (typeof s.maxItems === "number" && a.length > s.maxItems) out.push({ at, message: `has more than ${s.maxItems} items` });
      if (s.items !== undefined) a.forEach((x, i) => this.check(s.items as S, x, `${at}/${i}`, out));
      if (s.contains !== undefined) {
        const n = a.filter((x, i) => this.ok(s.contains as S, x, `${at}/${i}`)).length;
        const min = typeof s.minContains === "number" ? s.minContains : 1;
        if (n < min) out.push({ at, message: typeof s.description === "string" ? s.description : "lacks a required item" });
        if (typeof s.maxContains === "number" && n > s.maxContains) out.push({ at, message: `at most ${s.maxContains} such item may appear (only the last element may be a fan-out)` });
      }
    }
    if (Array.isArray(s.oneOf)) {
      const n = s.oneOf.filter((sub) => this.ok(sub as S, v, at)).length;
      if (n !== 1) {
        // Report the closest branch's problems: the one of the same JSON type.
        const same = (s.oneOf as Record<string, unknown>[]).find((sub) => {
          const t = (sub.$ref ? this.resolve(sub.$ref as string) : sub) as Record<string, unknown>;
          return t.type === k || (t.type === "integer" && k === "number");
        });
        if (n === 0 && same) this.check(same, v, at, out);
        else out.push({ at, message: n === 0 ? (typeof s.description === "string" ? `must be ${s.description}` : "matches no allowed form") : "is ambiguous" });
      }
    }
    if (Array.isArray(s.anyOf) && !s.anyOf.some((sub) => this.ok(sub as S, v, at))) out.push({ at, message: "matches no allowed form" });
    if (s.not !== undefined && this.ok(s.not as S, v, at)) out.push({ at, message: "is a form that is not allowed" + (typeof s.description === "string" ? ` (${s.description})` : "") });
    if (s.if !== undefined) {
      if (this.ok(s.if as S, v, at)) { if (s.then !== undefined) this.check(s.then as S, v, at, out); }
      else if (s.else !== undefined) this.check(s.else as S, v, at, out);
    }
    if (Array.isArray(s.allOf)) for (const sub of s.allOf) this.check(sub as S, v, at, out);
  }
}

export const graphValidator = new Validator(graphSchema as Record<string, unknown>);

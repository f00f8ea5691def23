// Core schema support: the Standard Schema v1 interface (copied as types, as the spec asks, so
// zod, valibot and arktype all fit without tidings depending on any) and one validation helper.
import { InvalidArgument } from './errors.js';

/** One segment of an issue's path: a key, or an object holding the key. */
export type StandardSchemaPathSegment =
  | PropertyKey
  | {
      /** The key. */
      readonly key: PropertyKey;
    };

/** One problem a schema found. */
export interface StandardSchemaIssue {
  /** What is wrong, in the library's words. */
  readonly message: string;
  /** Where in the value; absent or empty for the value itself. */
  readonly path?: ReadonlyArray<StandardSchemaPathSegment> | undefined;
}

/** What `validate` returns: the output value, or the issues. */
export type StandardSchemaResult<Output> =
  | {
      /** The output value (after transforms and defaults). */
      readonly value: Output;
      /** Absent on success. */
      readonly issues?: undefined;
    }
  | {
      /** What is wrong; at least one. */
      readonly issues: ReadonlyArray<StandardSchemaIssue>;
    };

/** The `~standard` property of a Standard Schema. */
export interface StandardSchemaProps<Input = unknown, Output = Input> {
  /** The spec version: 1. */
  readonly version: 1;
  /** The library, e.g. `zod`, `valibot`, `arktype`. */
  readonly vendor: string;
  /** Checks `value`; synchronous or asynchronous as the schema needs. */
  readonly validate: (value: unknown) => StandardSchemaResult<Output> | Promise<StandardSchemaResult<Output>>;
  /** Carries the input and output types for inference only; never set at run time. */
  readonly types?:
    | {
        /** The type the schema accepts. */
        readonly input: Input;
        /** The type it produces. */
        readonly output: Output;
      }
    | undefined;
}

/**
 * A schema of any library implementing Standard Schema v1 (https://standardschema.dev): zod
 * 3.24+, valibot 1, arktype 2 and others. tidings depends on none of them.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The standard interface. */
  readonly '~standard': StandardSchemaProps<Input, Output>;
}

/** The type a schema accepts (what travels on the wire). */
export type InferInput<S extends StandardSchemaV1> = NonNullable<S['~standard']['types']>['input'];

/** The type a schema produces after its transforms and defaults (what the receiver gets). */
export type InferOutput<S extends StandardSchemaV1> = NonNullable<S['~standard']['types']>['output'];

/** True for a Standard Schema v1 (an object or function with a `~standard.validate` function). */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  const props = (value as { '~standard'?: { version?: unknown; validate?: unknown } })['~standard'];
  return typeof props === 'object' && props !== null && props.version === 1 && typeof props.validate === 'function';
}

/** Issues named in a failure message; the rest are counted. */
const MAX_ISSUES_SHOWN = 3;

/**
 * Validates `value` against `schema`: returns the schema's output value (a promise only when the
 * schema validates asynchronously) or throws InvalidArgument whose `field` is the first failing
 * path under `field` (e.g. `args.b`) and whose message lists the issues
 * (`Invalid args.b: Expected number, received string`).
 */
export function validateWith<S extends StandardSchemaV1>(schema: S, value: unknown, field: string): InferOutput<S> | Promise<InferOutput<S>> {
  const result = schema['~standard'].validate(value);
  return result instanceof Promise ? result.then((r) => outputOf(r, value, field)) : outputOf(result, value, field);
}

function outputOf<Output>(result: StandardSchemaResult<Output>, value: unknown, field: string): Output {
  if (!result.issues) return result.value;
  const issues = result.issues;
  const first = issues[0];
  const failing = first ? pathOf(field, first.path) : field;
  const received = first?.path ? valueAt(value, first.path) : value;
  const described = issues.slice(0, MAX_ISSUES_SHOWN).map((issue) => `${pathOf(field, issue.path)}: ${issue.message}`);
  if (issues.length > MAX_ISSUES_SHOWN) described.push(`and ${issues.length - MAX_ISSUES_SHOWN} more`);
  const err = new InvalidArgument(failing, first ? first.message : 'a value its schema accepts', received);
  err.message = `Invalid ${described.length ? described.join('; ') : `${field}: rejected by its schema`}`;
  throw err;
}

/** `args` + [`b`, 0] → `args.b[0]`. */
function pathOf(field: string, path: StandardSchemaIssue['path']): string {
  let out = field;
  for (const segment of path ?? []) {
    const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
    out += typeof key === 'number' ? `[${key}]` : typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/** The value at `path` inside `value` (undefined when the path leaves the value). */
function valueAt(value: unknown, path: NonNullable<StandardSchemaIssue['path']>): unknown {
  let at = value;
  for (const segment of path) {
    if (at === null || typeof at !== 'object') return undefined;
    const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at;
}

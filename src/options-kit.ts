/**
 * Options declared once: each capability describes its options as a schema of {@link Option}s.
 * From the schema come the validation (with the messages of the kit in `validate.ts`), the
 * defaults, the normalized type (`Normalized<typeof schema>`) and the rows of the option tables in
 * `docs/reference/` (`scripts/options-docs.ts`). The prose of each option is its TSDoc on the
 * options interface, which the table quotes; the schema holds only rules.
 *
 * @module
 */
import { boolean, integer, isRecord, oneOf, optionalFunction, record } from './validate.js'

/**
 * What was read before an option: its group's earlier members, then the enclosing groups'
 * (looked up through the prototype chain). Later options may default from earlier ones.
 */
export type Siblings = Readonly<Record<string, unknown>>

/** How the reference table shows an option. */
export interface OptionDoc {
  /** What it accepts: `integer 1–60 000`, `'memory' \| { redis }`. */
  readonly accepts: string
  /** Its default as shown; absent: none, or `required`. */
  readonly default?: string
  /** The interface whose TSDoc describes the members of a group. */
  readonly type?: string
  /** A page of `docs/` that tells more, linked from the row. */
  readonly see?: string
}

/** One option: how it is read, and how the table shows it. */
export interface Option<T> {
  /** Validates `value` (found at `path`), fills in its default; throws the kit's `TypeError`. */
  read(value: unknown, path: string, siblings: Siblings): T
  readonly doc: OptionDoc
  /** The members of a group, for the table. */
  readonly fields?: Readonly<Record<string, Option<unknown>>>
}

/** The normalized value of an option or schema. */
export type Normalized<O> = O extends Option<infer T> ? T : never

/** Where a member of `parent` is: `options` is the root, whose members are named alone. */
export function at(parent: string, key: string): string {
  return parent === 'options' ? key : `${parent}.${key}`
}

/**
 * `12345678` as `12 345 678`, from 10,000 on. Not `toLocaleString`: these texts are built when the
 * package is imported, and the first `toLocaleString` loads ICU's number formatting (about 20 ms,
 * with 0.1 ms per call after it: 30 ms of every import, a serverless cold start's included).
 */
const thousands = (value: number): string =>
  Math.abs(value) >= 10_000 ? String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ' ') : String(value)

/** An option of any shape: the capability reads it, and says how the table shows it. */
export function custom<T>(
  read: (value: unknown, path: string, siblings: Siblings) => T,
  doc: OptionDoc,
): Option<T> {
  return { read, doc }
}

/**
 * A whole number in `[min, max]`. `fallback` (a number, or computed from the options before it)
 * fills it in when absent; without one it is required, unless `optional` (then `undefined`).
 */
export function int(range: {
  readonly min: number
  readonly max: number
  readonly fallback?: number | ((siblings: Siblings) => number)
  /** The default as the table shows it, when `fallback` is computed. */
  readonly shown?: string
}): Option<number>
export function int(range: {
  readonly min: number
  readonly max: number
  readonly optional: true
}): Option<number | undefined>
export function int(range: {
  readonly min: number
  readonly max: number
  readonly fallback?: number | ((siblings: Siblings) => number)
  readonly shown?: string
  readonly optional?: true
}): Option<number | undefined> {
  const { min, max, fallback, optional } = range
  return {
    read(value, path, siblings) {
      if (value === undefined && optional) return undefined
      const given = typeof fallback === 'function' ? fallback(siblings) : fallback
      return integer(value, path, { min, max, ...(given === undefined ? {} : { fallback: given }) })
    },
    doc: {
      accepts: `integer ${thousands(min)}–${thousands(max)}`,
      ...(range.shown !== undefined
        ? { default: range.shown }
        : typeof fallback === 'number'
          ? { default: String(fallback) }
          : optional
            ? {}
            : { default: 'required' }),
    },
  }
}

/** One of `allowed`, the first by default; a refused value is shown (a name is no secret). */
export function choice<const T extends string | boolean>(allowed: readonly T[]): Option<T> {
  const shown = allowed.map((item) => (typeof item === 'string' ? `'${item}'` : String(item)))
  return {
    read: (value, path) => oneOf(value, path, allowed),
    doc: { accepts: shown.join(' | '), default: shown[0] as string },
  }
}

/** A boolean, `fallback` when absent. */
export function flag(fallback: boolean): Option<boolean> {
  return {
    read: (value, path) => boolean(value, path, fallback),
    doc: { accepts: 'boolean', default: String(fallback) },
  }
}

/** An optional function; `signature` says what it is called with (in the message and table). */
export function fn<T>(signature: string, shown?: string): Option<T | undefined> {
  return {
    read: (value, path) => optionalFunction<T>(value, path, signature),
    doc: { accepts: `function ${signature}`, ...(shown === undefined ? {} : { default: shown }) },
  }
}

/** An option another schema reads: accepted as it is here, shown as `option` shows it. */
export function passed<T>(option: Option<T>): Option<unknown> {
  return { read: (value) => value, doc: option.doc }
}

/** An option accepted as it is (no check: the type system's, or a later step's). */
export function any<T>(doc: OptionDoc): Option<T | undefined> {
  return { read: (value) => value as T | undefined, doc }
}

type Fields<I> = { readonly [K in keyof Required<I>]: Option<unknown> }
type Values<F> = { -readonly [K in keyof F]: Normalized<F[K]> }

/**
 * A group of options (an options object or one of its members): only the `fields`' keys are
 * accepted; each is read in order, so a later one may default from an earlier one (see {@link How}).
 *
 * `group<Interface>()(fields)`: the compiler holds the keys to the interface's, no more, no less.
 */
export function group<I>() {
  function read<F extends Fields<I>>(
    fields: F & Record<Exclude<keyof F, keyof I>, never>,
    how?: How<F, never, 'empty' | 'required'>,
  ): Group<Readonly<Values<F>>, F>
  function read<F extends Fields<I>>(
    fields: F & Record<Exclude<keyof F, keyof I>, never>,
    how: How<F, never, 'undefined'>,
  ): Group<Readonly<Values<F>> | undefined, F>
  function read<F extends Fields<I>, R>(
    fields: F & Record<Exclude<keyof F, keyof I>, never>,
    how: How<F, R, 'empty' | 'required'> & {
      readonly finish: NonNullable<How<F, R, 'empty'>['finish']>
    },
  ): Group<R, F>
  function read<F extends Fields<I>, R>(
    fields: F & Record<Exclude<keyof F, keyof I>, never>,
    how: How<F, R, 'undefined'> & {
      readonly finish: NonNullable<How<F, R, 'undefined'>['finish']>
    },
  ): Group<R | undefined, F>
  function read<F extends Fields<I>, R>(
    fields: F,
    how: How<F, R, 'empty' | 'undefined' | 'required'> = {},
  ): Option<unknown> {
    const keys = Object.keys(fields)
    return {
      read(value, path, outer) {
        if (value === undefined && how.absent === 'undefined') return undefined
        const given = how.absent === 'required' ? value : (value ?? {})
        const input = how.open && isRecord(given) ? given : record(given, path, keys)
        const values: Record<string, unknown> = {}
        // What a member sees: the members read before it, what `before` found, then the
        // enclosing groups' members.
        const seen: Record<string, unknown> = Object.assign(
          Object.create(outer),
          how.before?.(input, path),
        )
        for (const key of keys) {
          const option = (fields as Record<string, Option<unknown>>)[key] as Option<unknown>
          values[key] = seen[key] = option.read(input[key], at(path, key), seen)
        }
        return how.finish ? how.finish(values as Values<F>, path, seen) : Object.freeze(values)
      },
      doc: { accepts: 'object', ...how.doc },
      fields,
    }
  }
  return read
}

/** A {@link group}: an option with its members. */
export type Group<T, F> = Option<T> & { readonly fields: F }

/** How a {@link group} is read beyond its members. */
interface How<F, R, A extends 'empty' | 'undefined' | 'required'> {
  /** Checks rules across options and shapes the result (default: the values, frozen). */
  readonly finish?: (values: Values<F>, path: string, seen: Siblings) => R
  /**
   * A missing group: `'empty'` (default) reads `{}` (for `undefined` and `null`), `'undefined'`
   * is `undefined`; `'required'` refuses it (`must be an object`).
   */
  readonly absent?: A
  readonly doc?: Partial<OptionDoc>
  /** Keys beyond the members are ignored rather than refused (options that never refused them). */
  readonly open?: true
  /**
   * Runs before the members are read (rules about the options' presence); what it returns is
   * seen by the members and `finish` as if read before them.
   */
  readonly before?: (input: Record<string, unknown>, path: string) => Siblings | undefined
}

/** One row of a reference table: the option's path and how it is shown. */
export interface ReferenceRow {
  readonly path: string
  readonly doc: OptionDoc
  /** The interface and member whose TSDoc describes it. */
  readonly type: string | undefined
  readonly key: string
}

/** The rows of `option`'s table: one per member, a group's members in its place. */
export function referenceRows(
  option: Option<unknown>,
  path: string,
  type: string | undefined,
): ReferenceRow[] {
  const rows: ReferenceRow[] = []
  for (const [key, member] of Object.entries(option.fields ?? {})) {
    const name = at(path, key)
    if (member.fields !== undefined && member.doc.type !== undefined) {
      rows.push(...referenceRows(member, name, member.doc.type))
    } else {
      rows.push({ path: name, doc: member.doc, type, key })
    }
  }
  return rows
}

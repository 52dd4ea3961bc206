import { parseIsoDay } from './dates.js'

// Validation answers in Laravel's 422 shape, with its message wording, because
// that is what callers of the real platform see and what the gateway passes on.

export interface ValidationBody {
  message: string
  errors: Record<string, string[]>
}

// FILTER_VALIDATE_INT (ext/filter): a sign, then 0 alone or digits without a leading zero,
// once the white space and NUL at both ends (PHP_FILTER_TRIM_DEFAULT) are trimmed.
const INTEGER = /^[ \t\r\v\n\0]*([+-]?(?:0|[1-9]\d*))[ \t\r\v\n\0]*$/
const FLAG_VALUES = new Map<unknown, boolean>([
  [true, true], [false, false], [1, true], [0, false], ['1', true], ['0', false], ['true', true], ['false', false],
])

/** Collects every failed rule of one request, as Laravel reports them all at once. */
export class Validator {
  readonly #errors: Record<string, string[]> = {}

  fail(field: string, message: string): undefined {
    ;(this.#errors[field] ??= []).push(message)
    return undefined
  }

  hasErrors(): boolean {
    return Object.keys(this.#errors).length > 0
  }

  /** Laravel's summary: the first message, plus how many others there are. */
  body(): ValidationBody {
    const messages = Object.values(this.#errors).flat()
    const others = messages.length - 1
    const suffix = others === 0 ? '' : ` (and ${others} more error${others === 1 ? '' : 's'})`
    return { message: `${messages[0] ?? 'The given data was invalid.'}${suffix}`, errors: this.#errors }
  }

  required(field: string, value: unknown): boolean {
    const missing = value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)
    if (missing) this.fail(field, `The ${label(field)} field is required.`)
    return !missing
  }

  date(field: string, value: unknown): number | undefined {
    if (!this.required(field, value)) return undefined
    const day = typeof value === 'string' ? parseIsoDay(value) : undefined
    return day ?? this.fail(field, `The ${label(field)} field must match the format Y-m-d.`)
  }

  /**
   * Laravel's `integer` rule, filter_var($value, FILTER_VALIDATE_INT): JSON numbers, and
   * strings as that filter reads them (` 101`, `+101`; never `0101`), `true` as "1". Past
   * 2^53 a string is refused, where PHP reads an id no account has.
   */
  integer(field: string, value: unknown): number | undefined {
    if (typeof value === 'number' && Number.isSafeInteger(value)) return value
    const digits = typeof value === 'string' ? INTEGER.exec(value)?.[1] : value === true ? '1' : undefined
    const id = digits === undefined ? NaN : Number(digits)
    // `-0` is 0 to PHP.
    if (Number.isSafeInteger(id)) return id === 0 ? 0 : id
    return this.fail(field, `The ${label(field)} field must be an integer.`)
  }

  /** A required, non-empty list of integers, each error named by its index as Laravel's `field.*` rules do. */
  integers(field: string, value: unknown): number[] | undefined {
    if (!this.required(field, value)) return undefined
    if (!Array.isArray(value)) return this.fail(field, `The ${label(field)} field must be an array.`)
    const ids = value.map((item: unknown, i) => this.integer(`${field}.${i}`, item))
    return ids.every((id) => id !== undefined) ? ids : undefined
  }

  /** A positive number; query strings and JSON numbers alike. */
  positiveNumber(field: string, value: unknown): number | undefined {
    if (!this.required(field, value)) return undefined
    const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN
    if (!Number.isFinite(number)) return this.fail(field, `The ${label(field)} field must be a number.`)
    return number > 0 ? number : this.fail(field, `The ${label(field)} field must be greater than 0.`)
  }

  /** An absent flag is off. */
  flag(field: string, value: unknown): boolean {
    if (value === undefined || value === null) return false
    return FLAG_VALUES.get(value) ?? this.fail(field, `The ${label(field)} field must be true or false.`) ?? false
  }

  string(field: string, value: unknown): string | undefined {
    if (!this.required(field, value)) return undefined
    return typeof value === 'string' ? value : this.fail(field, `The ${label(field)} field must be a string.`)
  }

  oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T | undefined {
    const found = allowed.find((option) => typeof value === 'string' && option === value.toLowerCase())
    return found ?? this.fail(field, `The selected ${label(field)} is invalid.`)
  }

  /** dateFrom <= dateTo, reported on the later field as Laravel's `after_or_equal` does. */
  ordered(laterField: string, earlierField: string, earlier: number | undefined, later: number | undefined): void {
    if (earlier !== undefined && later !== undefined && later < earlier) {
      this.fail(laterField, `The ${label(laterField)} field must be a date after or equal to ${label(earlierField)}.`)
    }
  }
}

/** Laravel's displayable attribute: `dateFrom` → `date from`, `budget.daily` → `budget.daily`. */
function label(field: string): string {
  return field.replace(/[A-Z]/g, (letter) => ` ${letter.toLowerCase()}`)
}

/** Narrows a record of parsed fields once every one of them was valid. */
export function allDefined<T extends object>(fields: T): fields is { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.values(fields).every((value) => value !== undefined)
}

/** A JSON body as a plain record; anything else reads as an empty one. */
export function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}

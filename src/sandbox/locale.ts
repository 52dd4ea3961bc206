import type { ReportRow } from './report-data.js'

// A platform localized as a Laravel app with a locale middleware is: it picks the
// caller's preferred language among those it has (Symfony's getPreferredLanguage: the
// highest `q`, ties in the order sent, the first available when none matches), writes
// its labels in it, and says so with `Content-Language` and `Vary: Accept-Language`.

export type Locale = 'en' | 'de'
const LOCALES: readonly Locale[] = ['en', 'de']
export const LOCALIZED_VARY = 'Accept-Language'
const isLocale = (language: string): language is Locale => (LOCALES as readonly string[]).includes(language)

/** The language of an answer to a request with this `accept-language`: English unless German is preferred. */
export function localeOf(acceptLanguage: string | readonly string[] | undefined): Locale {
  const joined = typeof acceptLanguage === 'object' ? acceptLanguage.join(',') : (acceptLanguage ?? '')
  const ranges = joined
    .split(',')
    .map((part, order) => {
      const [range = '', ...params] = part.split(';').map((p) => p.trim())
      const q = params.find((p) => /^q=/i.test(p))
      return { language: range.toLowerCase().split('-')[0] ?? '', q: q === undefined ? 1 : Number(q.slice(2)), order }
    })
    .filter((r) => r.language !== '' && Number.isFinite(r.q) && r.q > 0)
    .sort((a, b) => b.q - a.q || a.order - b.order)
  return ranges.map((r) => r.language).find(isLocale) ?? 'en'
}

const POSITION_LABELS: Readonly<Record<Locale, Readonly<Record<string, string>>>> = {
  en: {},
  de: { 'Above the fold': 'Sichtbarer Bereich', 'Below the fold': 'Unterhalb des sichtbaren Bereichs', 'Full screen': 'Vollbild', Unknown: 'Unbekannt' },
}

/** `rows` with their labels in `locale`: the rows themselves, changed. */
export function localizeRows(rows: ReportRow[], locale: Locale): ReportRow[] {
  const labels = POSITION_LABELS[locale]
  for (const row of rows) if (row.position !== undefined) row.position = labels[row.position] ?? row.position
  return rows
}

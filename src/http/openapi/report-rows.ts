// The report body as callers receive it: the platform's, byte for byte. The gateway reads
// no row of it (a 200 is stored when it is JSON holding a report by cache.reportFields,
// whatever its rows); so `Report` holds `data` to no shape, and `ReportRow` says the rows
// the platform is known to answer with (camelCase, ../shared/platform-api.md, the rows the
// sandbox makes), each field optional: a typed client reads them, no validator holds the
// platform's rows to them.

type Json = Record<string, unknown>

/** `components.schemas.ReportRow`: a row's labels, by the split and flags asked for, then its figures. */
export const REPORT_ROW_SCHEMA: Json = {
  type: 'object',
  description:
    'One row of a report as the platform is known to answer it; the gateway passes the rows on as the platform sent them, unread, so a field may be missing or of another shape, and others may come. ' +
    'A row has the labels the request asked for, and no others: `date` with `byDate`, `campaignId` and `campaignName` with `byCampaign`, ' +
    '`creativeId` and `creativeName` in the `creatives` split, `position` in the `adPlacementPositions` split. ' +
    '`reach` counts unique users: the reach of a period is less than the sum of its days\', so ask for the period rather than adding days up.',
  properties: {
    date: { type: 'string', format: 'date', description: 'The day, `YYYY-MM-DD`; with `byDate`.' },
    campaignId: { type: 'integer', minimum: 1, description: 'With `byCampaign`.' },
    campaignName: { type: 'string', description: 'With `byCampaign`.' },
    creativeId: { type: 'integer', minimum: 1, description: 'In the `creatives` split.' },
    creativeName: { type: 'string', description: 'In the `creatives` split.' },
    position: { type: 'string', description: 'In the `adPlacementPositions` split: where the ad was shown, e.g. `Above the fold`.' },
    impressions: { type: 'integer', minimum: 0 },
    clicks: { type: 'integer', minimum: 0 },
    ctr: { type: 'number', minimum: 0, description: 'Clicks per hundred impressions (a percentage, two decimals): `0.83` is 0.83 %.' },
    spent: { type: 'number', minimum: 0, description: 'Spend in `currency`, two decimals.' },
    reach: { type: 'integer', minimum: 0, description: 'Unique users who saw the ads.' },
    currency: { type: 'string', description: 'The currency of `spent`: `USD`, or the advertiser\'s own with `spentBased=local`.' },
  },
  examples: [{ date: '2026-01-01', campaignId: 123, campaignName: 'Spring sale', impressions: 10432, clicks: 87, ctr: 0.83, spent: 12.51, reach: 8120, currency: 'USD' }],
}

const ROWS = {
  data: {
    description:
      'The rows, as the platform sent them: any JSON, which the gateway does not read. The platform is known to answer an array of `ReportRow` objects, in the order of date, campaign, then creative or position.',
  },
}
const AS_ANSWERED = 'The platform\'s report, as the platform answered it (the gateway does not change it); its rows are under `data`.'

/**
 * `components.schemas.Report`: the body of a report answer, as the gateway passes it on by
 * cache.reportFields (report-body.ts): `[]` any JSON object or array, Laravel's error body
 * aside; a list of fields an object holding one of them; `[*]` any JSON. A validating client
 * or proxy takes every report the gateway sends.
 */
export function reportSchema(reportFields: readonly string[]): Json {
  if (reportFields.includes('*')) return { description: `${AS_ANSWERED} Any JSON is passed on (cache.reportFields: [*]).`, properties: ROWS }
  if (reportFields.length === 0) return { type: ['object', 'array'], description: `${AS_ANSWERED} Any JSON object or array is passed on but Laravel's error body (cache.reportFields: []).`, properties: ROWS }
  return {
    type: 'object',
    description: `${AS_ANSWERED} An object holding ${reportFields.map((f) => `\`${f}\``).join(' or ')} is passed on (cache.reportFields).`,
    properties: ROWS,
    anyOf: reportFields.map((field) => ({ required: [field] })),
  }
}

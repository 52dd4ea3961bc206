import type { FastifySchema, FastifySchemaCompiler } from 'fastify'
import { JOB_REPORT_BYTES } from '../../jobs/jobs.js'

// What callers may send to the /api/v1 routes, as JSON Schema for the OpenAPI document
// (openapi/document.ts). Documentation only: those routes check their input themselves,
// in the contract's order (key before body), and with their own messages
// (reports/report-query.ts), so their scope compiles these with `describeOnly`.

/** A validator that accepts everything: a route schema of the /api/v1 scope only describes. */
export const describeOnly: FastifySchemaCompiler<unknown> = () => () => true

const DATE = {
  type: 'string',
  format: 'date',
  pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$',
} as const

const POSITIVE_ID = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const

// A query holds text, and a boolean there is `true` or `false`: the document names booleans
// beside the four strings so that a client generated from it takes `byDate: true`.
const QUERY_FLAG = {
  type: ['boolean', 'string'],
  enum: [true, false, '1', 'true', '0', 'false'],
  description: '`true` or `1` switch it on; `false`, `0` or leaving it out switch it off. Anything else (`TRUE`, `yes`) is 400 `GW_BAD_QUERY`.',
} as const

const BODY_FLAG = {
  type: ['boolean', 'integer', 'string'],
  enum: [true, false, 1, 0, '1', '0', 'true', 'false'],
  description: 'On: `true`, `1`, `"1"`, `"true"`; off: `false`, `0`, `"0"`, `"false"` or leaving it out. Anything else is 400 `GW_BAD_QUERY`.',
} as const

const SPLIT = {
  type: 'object',
  required: ['split'],
  properties: {
    split: {
      type: 'string',
      pattern: '^[A-Za-z0-9_-]+$',
      description: 'The report split, as the platform names it: `campaigns`, `adPlacementPositions`, `creatives`. A split the platform does not have is its 404.',
    },
  },
} as const

/** `x-request-id` as a caller sends it on a report read. */
const REQUEST_ID = {
  type: 'string',
  description: 'Passed on to the platform and returned; one is made when absent, malformed, or starting with a prefix of the gateway\'s own calls (`ownership-`, `token-probe-`, `job-`, `refresh-ahead-`).',
} as const

const REPORT_HEADERS = {
  type: 'object',
  properties: {
    'cache-control': {
      type: 'string',
      description: '`no-cache` without a validator (`if-none-match`, `if-modified-since`), from a team given `refresh: true`, forces a fresh copy from the platform (`x-cache: REFRESH`; concurrent ones share one platform call), unless the copy is younger than `cache.refreshMinAge`: then that copy answers it (`HIT`). With a validator (fetch() adds `no-cache` to a request that carries one), or from another team, it is a read like any other.',
    },
    pragma: {
      type: 'string',
      description: '`no-cache`: as `cache-control: no-cache`.',
    },
    prefer: {
      type: 'string',
      description: '`respond-async` (RFC 7240): when no copy answers the read now, it is answered `202` with `location: /api/v1/jobs/{id}`, `preference-applied: respond-async` and the job\'s status (`JobStatus`), and run as a job of the team (this operation\'s `202`; the typed client asks it with `reportJob()`); a copy that answers now is answered as usual. A forced refresh is read as it asks, ' +
        `and so is a report taking more than ${JOB_REPORT_BYTES / 1024} KiB in a job's record (its parameters, its body as sent and its cache key: a body of some 700 \`campaignIds\`): ` +
        'it is answered as a read without the preference (its `200` or refusal, no `preference-applied`), as when Redis cannot keep a job.',
    },
    'if-none-match': {
      type: 'string',
      description: 'The `etag` the caller holds (either form, or `*`): `304` with no body while the report has not changed. A read that carries it is answered from the gateway\'s copy, whatever its `cache-control` says.',
    },
    'if-modified-since': {
      type: 'string',
      description: 'Not compared (answers carry no `last-modified`): a read that carries it is answered `200` from the gateway\'s copy, whatever its `cache-control` says.',
    },
    'x-cache-warm': {
      type: 'string',
      description: '`1`: a cache warm-up, as `npm run warm` sends it: its platform call, if the copy needs one, waits behind the team\'s other calls (its callers\', its refreshes ahead, its stale-while-revalidate refreshes), asked as a job (`prefer: respond-async`) too. Any other value: a read like any other.',
    },
    'x-request-id': REQUEST_ID,
  },
} as const

function dateRange(maxRangeDays: number) {
  return {
    dateFrom: { ...DATE, description: `First day, a real calendar date \`YYYY-MM-DD\` (\`2026-02-30\` is 400). Must not be after \`dateTo\`; the range spans at most ${maxRangeDays} days.` },
    dateTo: { ...DATE, description: `Last day, included; a real calendar date \`YYYY-MM-DD\`, not before \`dateFrom\`, at most ${maxRangeDays} days after it counting both ends.` },
  }
}

const NORMALIZED =
  'Validated before anything goes upstream: an invalid value is 400 `GW_BAD_QUERY` whose message names the parameter, ' +
  'and a known parameter given twice is 400, as is `dateFrom`, `dateTo`, `byDate` or `byCampaign` in another spelling (`bydate`, `date_from`: ' +
  '`bydate: the platform reads byDate; send it so`). The same report in different spellings (parameter order, `true` or `1`, ' +
  'a switched-off flag or none, `007` or `7`) is one cache entry and one platform call; the platform receives the ' +
  'canonical form. Every distinct query is its own entry: a report is never built out of others.'

/** `GET /api/v1/report/*`: the cached report read. */
export function reportGetSchema(opts: { maxRangeDays: number }): FastifySchema {
  return {
    tags: ['reports'],
    operationId: 'getReport',
    summary: 'Read a report (cached)',
    description:
      `${NORMALIZED} Any other query parameter (for example \`spentBased\`) is passed on unchanged and is part of the cache key. ` +
      'Every GET under `/api/v1/report/` is read this way; a team limited to some advertisers reads at `/api/v1/report/{split}/get` only (any other path is 403 `GW_FORBIDDEN`). The body is the platform\'s, byte for byte. ' +
      'This document describes the gateway with its report cache on (`cache.enabled`, the default); with it off, a report read is forwarded as any other platform call is, and its answer carries none of the report headers (`x-cache`, `cache-status`, `platform-usage`, `report-settled-through`, `report-provisional-days`).',
    params: SPLIT,
    querystring: {
      type: 'object',
      required: ['advertiserId', 'dateFrom', 'dateTo'],
      properties: {
        advertiserId: { ...POSITIVE_ID, description: 'The account whose report this is: digits only (`007` is `7`), one the team may read (else 403 `GW_FORBIDDEN`).' },
        ...dateRange(opts.maxRangeDays),
        byDate: { ...QUERY_FLAG, description: `One row per day. ${QUERY_FLAG.description}` },
        byCampaign: { ...QUERY_FLAG, description: `One row per campaign. ${QUERY_FLAG.description}` },
        spentBased: {
          type: 'string',
          description: 'Passed on to the platform as it is: the currency `spent` is reported in (US dollars or the advertiser\'s own); the platform decides which values it takes.',
        },
      },
      additionalProperties: { type: 'string' },
    },
    headers: REPORT_HEADERS,
  }
}

/** `POST /api/v1/report/:split/get`: the older form of a report, with a JSON body. */
export function reportPostSchema(opts: { maxRangeDays: number; reportBodyBytes: number }): FastifySchema {
  const id = { oneOf: [POSITIVE_ID, { type: 'string', pattern: '^[0-9]+$' }] }
  return {
    tags: ['reports'],
    operationId: 'postReport',
    summary: 'Read a report, older POST form (cached)',
    description:
      `${NORMALIZED} The body is normalized (sorted keys, flags as booleans, \`campaignIds\` sorted and de-duplicated) ` +
      `and is part of the cache key; other keys are passed on. A body over ${opts.reportBodyBytes} bytes is 413 \`GW_PAYLOAD_TOO_LARGE\`; one of another type than JSON (a form too) is 400 \`GW_BAD_REQUEST\` (\`body: must be application/json\`; sent as exactly \`application/x-www-form-urlencoded\`, what \`curl -d\` sends, it adds \`(curl -d sends a form: add -H 'content-type: application/json')\`, and sent as \`text/plain\`, what \`fetch()\` labels a string body, \`(fetch labels a string body text/plain: add content-type: application/json)\`), whatever the team. ` +
      'The platform reports on the campaigns the body names (`campaignIds`, required: without them it answers 422 "The campaign ids field is required."), and never reads `advertiserId`; ' +
      'a team limited to some advertisers may name only campaigns of its own.',
    params: SPLIT,
    querystring: {
      type: 'object',
      properties: {
        advertiserId: { ...POSITIVE_ID, description: 'The account, when the body does not name it; if both do, they must be equal (else 400).' },
      },
      additionalProperties: { type: 'string' },
    },
    headers: REPORT_HEADERS,
    body: {
      type: 'object',
      required: ['campaignIds', 'dateFrom', 'dateTo'],
      properties: {
        advertiserId: { ...id, description: 'The account the campaigns belong to, for the gateway\'s scope check: a positive integer, one the team may read. The platform does not read it.' },
        campaignIds: {
          type: 'array',
          minItems: 1,
          items: id,
          description: 'Campaigns to report on, each one the platform has (else its 422): positive integers (numbers or digit strings), sorted and de-duplicated by the gateway.',
        },
        ...dateRange(opts.maxRangeDays),
        byDate: { ...BODY_FLAG, description: `One row per day. ${BODY_FLAG.description}` },
        byCampaign: { ...BODY_FLAG, description: `One row per campaign. ${BODY_FLAG.description}` },
      },
      additionalProperties: true,
    },
  }
}

/** `/api/v1/*`: every other call of a forwarded method, sent to the platform with its token. */
export function proxySchema(opts: { bodyLimit: number }): FastifySchema {
  return {
    tags: ['platform'],
    summary: 'Any other platform call (forwarded)',
    description:
      'Forwarded to the platform with the gateway\'s token, after the target, the key (401), the read/write rule (403) and the rate limit (429), ' +
      'then the body and the advertiser and campaign scope (403). Only GET, HEAD, POST, PUT, PATCH and DELETE are forwarded: OPTIONS is answered by the gateway ' +
      '(204 with `allow`), and any other method (TRACE, CONNECT, QUERY, …) is 405 `GW_METHOD_NOT_ALLOWED` with `allow`, before the key is read. ' +
      'Reads are GET and HEAD calls, and POST calls whose path ends in `/get`; anything else is a write ' +
      'and needs a team with `write: true`. JSON and form bodies are parsed, checked and re-serialized (nesting at most 32 levels, at most 256 keys, UTF-8); ' +
      'numbers are passed on as written (a body that writes one otherwise than `JSON.stringify` does, `1.0` or `1e2`, holds at most 10,000 values); ' +
      `bodies over ${opts.bodyLimit} bytes are 413, and one that finds no room in \`platform.bufferTotalBytes\` (bodies and answers under way, a team's bodies a quarter of it) 503 \`GW_BODY_BUDGET\`. The platform's answer is passed back as it is, its 5xx as 502 \`GW_UPSTREAM\`, ` +
      'and so is an answer that carries the gateway\'s token back (in a header, or in its body, decoded from gzip, deflate or br). ' +
      'Examples: `POST /api/v1/campaign/get?per_page=200` with `{"userId": 101}`; `DELETE /api/v1/campaign/banner/delete/101001?userId=101`.',
    params: {
      type: 'object',
      required: ['path'],
      properties: {
        path: {
          type: 'string',
          description: 'The platform path after `/api/v1/`, slashes included and sent as they are (for example `campaign/get`); an encoded slash (`%2F`), `..` or `//` is 404.',
        },
      },
    },
    headers: {
      type: 'object',
      properties: {
        'x-request-id': { type: 'string', description: 'Passed on to the platform and returned; one is made when absent or malformed.' },
      },
    },
  }
}

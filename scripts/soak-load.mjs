/**
 * What the soak sends (scripts/soak.mjs): the teams and their keys, the hot reports, and
 * the i-th request of the run in its cycle of 20.
 */


export const KEYS = {
  reader: 'rgw_soak_reader_key_000000000000000000000000',
  writer: 'rgw_soak_writer_key_111111111111111111111111',
  limited: 'rgw_soak_limited_key_22222222222222222222222',
}
export const LIMIT = { max: 20, window: '10s' }
export const ADMIN_TOKEN = 'soak-admin-token-0123456789abcdef'
export const GATEWAY_SECRET = 'soak-gateway-secret-0123456789abcdef'
export const KEY_PREFIX = 'rgw:'
export const CREDENTIAL = 'default'
const REPORT = '/api/v1/report/campaigns/get'
const HOT = Array.from({ length: 12 }, (_, i) => `${REPORT}?advertiserId=${101 + (i % 3)}&byDate=1&dateFrom=2026-01-${String(1 + i).padStart(2, '0')}&dateTo=2026-01-${String(8 + i).padStart(2, '0')}`)
export const HOT_PATHS = new Set(HOT)
// The writer creates campaigns of account 100, whose reports nobody reads: the reports of
// 101-103 stay what a pristine sandbox of the same seed answers.
export const WRITER_ACCOUNT = 100
/** The n-th campaign the writer team creates: a month of its own, a budget that grows, its account's first creative set (the sandbox's catalog). */
const campaign = (n) => {
  const month = `2027-${String(1 + (n % 12)).padStart(2, '0')}`
  return { userId: WRITER_ACCOUNT, name: `Soak ${n}`, adDomain: 'example.com', clickUrl: `https://example.com/soak/${n}`, dates: { from: `${month}-01`, to: `${month}-28` }, country: 'US', bid: 0.5, budget: { daily: 10, total: 100 + n }, creativeSetIds: [(WRITER_ACCOUNT * 1000 + 1) * 10 + 1] }
}

// One cycle of 20 requests: 9 hits, 3 misses, 4 from the rate-limited team, 2 bad, 1 write, 1 proxied read.
const CYCLE = ['hit', 'hit', 'miss', 'hit', 'limited', 'bad', 'hit', 'write', 'hit', 'limited', 'miss', 'hit', 'read', 'limited', 'hit', 'bad', 'hit', 'miss', 'limited', 'hit']
const BAD = [
  { what: 'bad date', path: `${REPORT}?advertiserId=101&byDate=1&dateFrom=2026-13-01&dateTo=2026-01-08`, key: KEYS.reader, expect: [400] },
  { what: 'no key', path: HOT[0], key: null, expect: [401] },
  { what: 'unknown key', path: HOT[0], key: 'rgw_soak_unknown_key_9999999999999999999999', expect: [401] },
  { what: 'advertiser out of scope', path: HOT[1], key: KEYS.writer, expect: [403] },
]
let misses = 0

/** The i-th request of the run: what it is, the statuses it may be answered with, and whether its 200 is checked against the pristine sandbox. */
export function requestFor(i) {
  const kind = CYCLE[i % CYCLE.length]
  const round = Math.floor(i / CYCLE.length)
  switch (kind) {
    case 'hit':
      return { kind, method: 'GET', path: HOT[i % HOT.length], key: KEYS.reader, expect: [200], checked: true }
    case 'miss': {
      // A week never asked before: advertiser by advertiser, day by day back from 2025-12-31.
      const n = misses++
      const from = new Date(Date.UTC(2025, 11, 31) - Math.floor(n / 3) * 86_400_000 - 7 * 86_400_000)
      const to = new Date(from.getTime() + 6 * 86_400_000)
      const day = (d) => d.toISOString().slice(0, 10)
      return { kind, method: 'GET', path: `${REPORT}?advertiserId=${101 + (n % 3)}&byCampaign=1&dateFrom=${day(from)}&dateTo=${day(to)}`, key: KEYS.reader, expect: [200], checked: true }
    }
    case 'limited':
      return { kind, method: 'GET', path: HOT[i % HOT.length], key: KEYS.limited, expect: [200, 429], checked: true }
    case 'bad': {
      const bad = BAD[round % BAD.length]
      return { kind: `bad (${bad.what})`, method: 'GET', path: bad.path, key: bad.key, expect: bad.expect }
    }
    case 'write':
      return { kind, method: 'POST', path: '/api/v1/campaign/banner/create', key: KEYS.writer, body: campaign(round), expect: [201] }
    default:
      return { kind: 'read', method: 'POST', path: '/api/v1/campaign/get', key: KEYS.reader, body: { userId: 101 }, expect: [200], checked: true }
  }
}

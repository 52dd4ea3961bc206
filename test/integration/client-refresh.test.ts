/**
 * The typed client's forced refresh (packages/client README, "A report"): a read with
 * `cache-control: no-cache`, from a team given `refresh: true`, is a fresh copy from the
 * platform (`REFRESH`) whether or not the client already holds the report's ETag. The kept
 * ETag sent beside it would be a validator, which the gateway answers from its copy
 * (`HIT`, a 304 revalidated): an app that had read a report once could never refresh it.
 */
import { createGatewayClient } from '@report-gateway/client'
import { describe, expect, it } from 'vitest'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS, TEAMS_YAML } from '../helpers/sandbox-gateway.js'

// Every copy is old enough to be refreshed: no wait for cache.refreshMinAge.
const env = useSandboxGateway({ yaml: `cache:\n  refreshMinAge: 0s\n${TEAMS_YAML}` })

function recordingClient() {
  const sent: { ifNoneMatch: string | null; cacheControl: string | null }[] = []
  const client = createGatewayClient({
    baseUrl: env.url,
    apiKey: KEYS.all,
    fetch: async (request) => {
      sent.push({ ifNoneMatch: request.headers.get('if-none-match'), cacheControl: request.headers.get('cache-control') })
      return fetch(request)
    },
  })
  return { client, sent }
}

const reportCalls = () => env.callerRequests().filter((r) => r.path === '/api/v1/report/campaigns/get').length

describe('a forced refresh through the typed client', () => {
  it.each([
    ['cache-control', '2026-01-06', { 'cache-control': 'no-cache' }],
    ['cache-control among other directives', '2026-01-07', { 'Cache-Control': 'max-age=0, No-Cache' }],
    ['pragma', '2026-01-08', { pragma: 'no-cache' }],
  ])('is REFRESH after the client read and kept the report (%s)', async (_name, dateTo, headers) => {
    const { client, sent } = recordingClient()
    const query = { advertiserId: 101, dateFrom: '2026-01-05', dateTo }
    const before = reportCalls()
    const first = await client.report('campaigns', query)
    expect(first.cache).toBe('MISS')
    const again = await client.report('campaigns', query)
    expect(again).toMatchObject({ cache: 'HIT', revalidated: true })

    const refreshed = await client.report('campaigns', query, { headers })
    expect(refreshed).toMatchObject({ cache: 'REFRESH', revalidated: false })
    expect(refreshed.rows).toEqual(first.rows)
    expect(sent[2]?.ifNoneMatch).toBeNull()
    expect(reportCalls() - before).toBe(2)

    // The refreshed copy's ETag is kept: the next plain read is a 304 revalidated.
    const after = await client.report('campaigns', query)
    expect(after).toMatchObject({ cache: 'HIT', revalidated: true, etag: refreshed.etag })
    expect(sent[3]?.ifNoneMatch).toBe(refreshed.etag)
  })
})

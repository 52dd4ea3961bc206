import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { mergeValues } from '../helpers/render-chart.js'
import { FULL, gateway, gatewayConfigFrom, install } from '../helpers/chart-manifests.js'
import { loadConfigFrom } from '../helpers/load-config.js'

// A replica holds its report cache (cache.l1MaxBytes) and the answers on their way to
// callers (platform.bufferTotalBytes) on top of what the process itself holds; a
// container whose memory limit is below their sum is killed the first time both fill.
// The pod the chart renders is loaded as the gateway loads it, under the memory limit
// the chart gives its container (what process.constrainedMemory() reads in it).

const MiB = 1024 * 1024
const REDIS = { 'redis-credentials': { url: 'redis://redis:6379' } }

/** A container's memory limit in bytes (`512Mi`, `2Gi`). */
function bytesOf(quantity: string): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(quantity)
  if (m === null) throw new Error(`a memory quantity this test reads: ${quantity}`)
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1) * MiB
}

/** The start's warnings about memory of the pod the chart renders with `values`, loaded under its container's limit. */
function podMemoryWarnings(values: Record<string, unknown>): string[] {
  const chart = install({ values: mergeValues(FULL, values) })
  const { resources } = gateway(chart) as unknown as { resources: { limits: { memory: string } } }
  const limit = bytesOf(resources.limits.memory)
  return gatewayConfigFrom(chart, REDIS, () => limit).warnings.filter((w) => w.includes('memory limit'))
}

describe('the memory a replica may hold, against its container\'s limit', () => {
  it('says nothing with the chart\'s defaults: 64 MiB of cache and 128 MiB of answers fit in 512 MiB', () => {
    expect(podMemoryWarnings({})).toEqual([])
  })

  it('warns at start when the cache and the answers\' budget cannot fit in the limit, naming both settings, the sum and the limit', () => {
    const bigCache = podMemoryWarnings({ config: { cache: { l1MaxBytes: '256MiB' } } })
    expect(bigCache).toHaveLength(1)
    expect(bigCache[0]).toContain('cache.l1MaxBytes (256 MiB)')
    expect(bigCache[0]).toContain('platform.bufferTotalBytes (128 MiB)')
    expect(bigCache[0]).toContain('memory limit (512 MiB)')
    const bigBudget = podMemoryWarnings({ config: { platform: { bufferTotalBytes: '1GiB' } } })
    expect(bigBudget).toHaveLength(1)
    expect(bigBudget[0]).toContain('platform.bufferTotalBytes (1024 MiB)')
    // The same settings under a limit that holds them: no warning.
    expect(podMemoryWarnings({ config: { platform: { bufferTotalBytes: '1GiB' } }, resources: { limits: { memory: '2Gi' } } })).toEqual([])
  })

  it('counts the connections the listeners may hold (server.maxConnections, admin.maxConnections) at what an idle one holds', () => {
    const many = podMemoryWarnings({ config: { server: { maxConnections: 65536 } } })
    expect(many).toHaveLength(1)
    expect(many[0]).toContain('server.maxConnections + admin.maxConnections (65664 connections, 770 MiB)')
    expect(many[0]).toContain('memory limit (512 MiB)')
    expect(podMemoryWarnings({ config: { server: { maxConnections: 65536 } }, resources: { limits: { memory: '2Gi' } } })).toEqual([])
  })

  it('counts the report jobs\' results a replica without Redis keeps in its memory: the chart bounds them (jobs.resultsRoom 64MiB), and the start warns when their bound cannot fit', () => {
    const noRedis = mergeValues(FULL, { redis: { existingSecret: { name: '' } } })
    const chart = install({ values: noRedis })
    const limit = bytesOf((gateway(chart) as unknown as { resources: { limits: { memory: string } } }).resources.limits.memory)
    const config = gatewayConfigFrom(chart, {}, () => limit)
    expect(config.redis.url).toBeNull()
    expect(config.jobs.resultsRoom).toBe(64 * MiB)
    expect(config.warnings.filter((w) => w.includes('memory limit'))).toEqual([])
    // Set otherwise in `config`, the chart leaves it; with Redis it sets none (the results are in Redis).
    expect(gatewayConfigFrom(install({ values: mergeValues(noRedis, { config: { jobs: { resultsRoom: '32MiB' } } }) }), {}, () => limit).jobs.resultsRoom).toBe(32 * MiB)
    expect(gatewayConfigFrom(install({ values: FULL }), REDIS, () => limit).jobs.resultsRoom).toBeNull()
    // Without the chart's bound, the gateway's own default (256 MiB a team, one team here) cannot fit beside the cache and the answers.
    const env = { PLATFORM_BASE_URL: 'https://platform.example.com', PLATFORM_TOKEN: 'platform-token-abcdef123456', TEAMS_FILE: '/teams.yaml' }
    const teams = { '/teams.yaml': `teams:\n  growth:\n    keys: ["sha256:${'a'.repeat(64)}"]\n    advertisers: [101]\n` }
    const unbound = loadConfigFrom(env, teams, { memoryLimit: () => 512 * MiB }).warnings.filter((w) => w.includes('memory limit'))
    expect(unbound).toHaveLength(1)
    expect(unbound[0]).toContain('report jobs\' results kept in memory (256 MiB: jobs.resultBytesPerTeam for 1 team, no Redis)')
    expect(loadConfigFrom({ ...env, CONFIG_FILE: '/config.yaml' }, { ...teams, '/config.yaml': 'jobs:\n  resultsRoom: 64MiB\n' }, { memoryLimit: () => 512 * MiB }).warnings.filter((w) => w.includes('memory limit'))).toEqual([])
  })

  // The chart cannot see the start's sum, which the start says only in a pod's log: its
  // values say it beside the limit, as the start computes it from the chart's defaults.
  it('has values.yaml name, beside resources.limits.memory, the sum the start checks it against with the chart\'s defaults, with Redis and without', () => {
    const needed = (values: Record<string, unknown>, secrets: Record<string, Record<string, string>>) => {
      const [warning] = gatewayConfigFrom(install({ values }), secrets, () => 1).warnings.filter((w) => w.includes('memory limit'))
      return Number(/ = (\d+) MiB, over/.exec(warning ?? '')?.[1])
    }
    const withRedis = needed(FULL, REDIS)
    const noRedis = needed(mergeValues(FULL, { redis: { existingSecret: { name: '' } } }), {})
    for (const sum of [withRedis, noRedis]) expect(sum).toBeGreaterThan(0)
    const lines = readFileSync(new URL('../../helm/report-gateway/values.yaml', import.meta.url), 'utf8').split('\n')
    const limit = lines.findIndex((l, i) => l === '    memory: 512Mi' && lines.slice(0, i).reverse().find((above) => !above.trimStart().startsWith('#')) === '  limits:')
    const comment: string[] = []
    for (let i = limit - 1; lines[i]?.trimStart().startsWith('#'); i--) comment.unshift(lines[i]?.trim().replace(/^# ?/, '') ?? '')
    expect(comment.join(' ')).toContain(`${withRedis} MiB with the defaults and Redis, ${noRedis} MiB without`)
  })

  it('says nothing where no limit is known (no cgroup limit: process.constrainedMemory() reads 0 or 2^64 - 1)', () => {
    for (const none of [0, 2 ** 64]) {
      const config = loadConfigFrom({ PLATFORM_BASE_URL: 'https://platform.example.com', PLATFORM_TOKEN: 'platform-token-abcdef123456' }, {}, { memoryLimit: () => none })
      expect(config.warnings.filter((w) => w.includes('memory limit'))).toEqual([])
    }
  })
})

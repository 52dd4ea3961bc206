import { expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { REPORT_PATH } from '../helpers/build-gateway.js'
import { useAttackGateway } from './attack-gateway.js'

// What a report answer's `x-cache`, `age`, `cache-status` and `etag` tell a team of the
// other teams (docs/decisions/what-answers-tell-other-teams.md): a copy is shared by every
// team that may read its account, so a team of the same scope learns that one of them asked
// the report, and when; a team without the account learns nothing of it: 403 before any lookup.

const sg = useAttackGateway()
const week = (advertiser: number) => `${REPORT_PATH}?advertiserId=${advertiser}&byDate=1&dateFrom=2026-02-01&dateTo=2026-02-07`

async function read(key: string, target: string) {
  const res = await fetch(`${sg.url}${target}`, { headers: { 'x-api-key': key } })
  await res.arrayBuffer()
  return { status: res.status, cache: res.headers.get('x-cache'), age: res.headers.get('age'), cacheStatus: res.headers.get('cache-status'), etag: res.headers.get('etag') }
}

it('a team of the account reads the copy another team filled (HIT, its age); a team without the account is refused with nothing of the copy', async () => {
  // writer: 101; growth: 101 and 102.
  expect(await read(KEYS.writer, week(101))).toMatchObject({ status: 200, cache: 'MISS' })
  const shared = await read(KEYS.growth, week(101))
  expect(shared).toMatchObject({ status: 200, cache: 'HIT', age: expect.stringMatching(/^\d+$/) })
  expect(await read(KEYS.growth, week(102))).toMatchObject({ status: 200, cache: 'MISS' })
  expect(await read(KEYS.writer, week(102))).toEqual({ status: 403, cache: null, age: null, cacheStatus: null, etag: null })
})

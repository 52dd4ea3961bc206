import { REPORT_CAMPAIGNS, REPORT_READ } from './report-read.js'

/**
 * What makes `routes` (ownership.accountRoutes) unusable as written, one line each: a path
 * listed twice (one field would hold, unsaid), one ending in `/` (a call's path is matched
 * without its trailing slash: it would match none), a report read (placed by its own
 * fields: a field of its own would refuse a scoped team's reads).
 */
export function accountRouteProblems(routes: readonly { path: string }[]): string[] {
  const problems: string[] = []
  const first = new Map<string, number>()
  routes.forEach(({ path }, i) => {
    const name = `ownership.accountRoutes.${i}.path`
    const earlier = first.get(path)
    if (earlier !== undefined) problems.push(`${name}: ${path} is listed twice (ownership.accountRoutes.${earlier} too): list each route once, with the one field it reads`)
    else first.set(path, i)
    if (path.length > 1 && path.endsWith('/')) problems.push(`${name}: ends in /, and a call's path is matched without its trailing slash: write ${path.replace(/\/+$/, '')}`)
    if (REPORT_READ.test(path)) problems.push(`${name}: ${path} is a report read, placed by advertiserId (GET) or ${REPORT_CAMPAIGNS} (POST): remove it`)
  })
  return problems
}

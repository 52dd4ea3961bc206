import { routeTemplate } from '../platform/route-template.js'
import { epochDay, type CanonicalReport } from './report-query.js'

/**
 * The work a report asks of the platform, as the learned limit compares latencies by it:
 * its route, its range (⌈log2(days + 1)⌉: a year with a year), its splits (rows by date,
 * by campaign) and how many campaigns it names (⌈log2(n + 1)⌉), all read from the
 * canonical report, what the platform is sent: a POST form's range is its body's, and a
 * caller's query cannot name another.
 */
export function workClass(report: Pick<CanonicalReport, 'path' | 'dateFrom' | 'dateTo' | 'byDate' | 'byCampaign' | 'campaignIds'>): string {
  const from = epochDay(report.dateFrom) ?? 0
  const to = epochDay(report.dateTo) ?? from
  const range = Math.ceil(Math.log2(Math.max(1, to - from + 1) + 1))
  const splits = `${report.byDate ? 'd' : ''}${report.byCampaign ? 'c' : ''}`
  const campaigns = Math.ceil(Math.log2(report.campaignIds.length + 1))
  return `${routeTemplate(report.path)}|r${range}|${splits}|n${campaigns}`
}

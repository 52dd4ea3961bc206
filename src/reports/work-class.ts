import { routeTemplate } from '../platform/route-template.js'
import { pageClass } from '../access/page-class.js'
import { epochDay, type CanonicalReport } from './report-query.js'

/**
 * The work a report asks of the platform, as the learned limit compares latencies by it:
 * its route, its range (⌈log2(days + 1)⌉: a year with a year), its splits (rows by date,
 * by campaign), how many campaigns it names (⌈log2(n + 1)⌉) and the page it asks where a
 * page size or a page is passed on (`pageClass`: the platform's pagination of report rows
 * is not known, and a page of many rows would otherwise share the class of a page of one),
 * all read from the canonical report, what the platform is sent: a POST form's range is
 * its body's, and a caller's query cannot name another.
 */
export function workClass(report: Pick<CanonicalReport, 'path' | 'dateFrom' | 'dateTo' | 'byDate' | 'byCampaign' | 'campaignIds' | 'query' | 'body'>): string {
  const from = epochDay(report.dateFrom) ?? 0
  const to = epochDay(report.dateTo) ?? from
  const range = Math.ceil(Math.log2(Math.max(1, to - from + 1) + 1))
  const splits = `${report.byDate ? 'd' : ''}${report.byCampaign ? 'c' : ''}`
  const campaigns = Math.ceil(Math.log2(report.campaignIds.length + 1))
  const pages = pageClass({ query: [...new URLSearchParams(report.query)], json: report.body === null ? undefined : JSON.parse(report.body) })
  return `${routeTemplate(report.path)}|r${range}|${splits}|n${campaigns}${pages}`
}

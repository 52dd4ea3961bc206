// Where a team's webhook may point (docs/jobs.md, "Pushed when done"): an `http(s)` URL
// whose host is in the operator's allow-list (`jobs.webhookHosts`, empty: webhooks off),
// never a host of the platform's (PLATFORM_BASE_URL, a credential's `baseUrl`), so that no
// delivery reaches the platform or an address the operator did not name. Checked when the
// config loads, at each teams reload and again before each delivery; where the host's
// addresses then lead is checked by jobs/webhook-target.ts.

/** What an entry of `jobs.webhookHosts` is: the schema's description, and the words of a refusal. */
export const WEBHOOK_HOST_FORM = 'a host as a URL writes it (a DNS name or IPv4 address, an IPv6 address in brackets; no scheme, port, path or wildcard), e.g. hooks.example.org, localhost, [::1]'

/**
 * How a URL writes the host `entry`: in lower case, an IPv4 address as four decimal numbers
 * (`0x7f.0.0.1` and `127.1` are 127.0.0.1), an IPv6 address compressed (`[0:0:0:0:0:0:0:1]` is
 * [::1]); null when no URL has it as its host (`300.1.1.1`).
 */
export function hostAsWritten(entry: string): string | null {
  try {
    return new URL(`http://${entry}/`).hostname
  } catch {
    return null
  }
}

/**
 * Why `url` may not receive deliveries; null when it may. `unlisted` follows a refusal by
 * the allow-list (empty, or without the URL's host): what the reader does about it, where
 * that is to edit the list (the start: webhookHostsAdvice).
 */
export function webhookRefusal(url: string, allowedHosts: readonly string[], platformHosts: readonly string[], unlisted = ''): string | null {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return 'not a URL'
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `only http and https URLs receive deliveries (got ${parsed.protocol})`
  if (parsed.username || parsed.password) return 'a URL with credentials in it is refused'
  const host = parsed.hostname.toLowerCase()
  if (platformHosts.some((h) => h.toLowerCase() === host)) return `${host} is the platform's own host, not a receiver: a push there would let a team call the platform from inside the gateway, past its checks; ${elsewhere(host, parsed.protocol)}`
  if (allowedHosts.length === 0) return `jobs.webhookHosts is empty: webhooks are off${unlisted}`
  if (!allowedHosts.some((h) => h.toLowerCase() === host)) return `${host} is not in jobs.webhookHosts${unlisted}`
  return null
}

/**
 * What to do about team `team`'s webhook that `setting` (the allow-list, as its reader names
 * it) does not allow: the start says it with `jobs.webhookHosts`, the chart's refusal at
 * render (helm/report-gateway/templates/_helpers.tpl, checkWebhooks) in the same words with
 * `config.jobs.webhookHosts`, its values' name (test/unit/helm-chart-choices.test.ts holds
 * the chart to these words: a template cannot read them from here).
 */
export function webhookHostsAdvice(team: string, setting = 'jobs.webhookHosts'): string {
  return `list the webhook's host in ${setting}, or remove teams.${team}.webhook`
}

/**
 * Where a receiver may be instead of the platform's host. A platform on loopback (the
 * sandbox on one machine) leaves the machine's other name: that name at another port is
 * another service, which each attempt's socket check (jobs/webhook-target.ts) lets through.
 */
function elsewhere(host: string, protocol: string): string {
  const other = host === 'localhost' ? '127.0.0.1' : /^127\.|^\[::1\]$/.test(host) ? 'localhost' : null
  if (other === null) return 'point the webhook at a receiver on another host'
  return `on the platform's own machine, name the receiver otherwise: ${protocol}//${other}:<its port>/…, with ${other} in jobs.webhookHosts`
}

/** The hosts of the platform's base URLs (PLATFORM_BASE_URL, a named credential's `baseUrl`). */
export function hostsOf(baseUrls: readonly (string | null)[]): string[] {
  return baseUrls.flatMap((url) => {
    if (url === null) return []
    try {
      return [new URL(url).hostname]
    } catch {
      return []
    }
  })
}

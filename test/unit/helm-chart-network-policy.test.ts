/**
 * The chart's NetworkPolicy: who may reach the pods, and whom they may reach. How the
 * chart is rendered without helm: helm-chart.test.ts.
 */
import { describe, it, expect } from 'vitest'
import { mergeValues as merge, type RenderedChart, type Values } from '../helpers/render-chart.js'
import { install, type Deployment, one, type NetworkPolicy, selects, TEAMS } from '../helpers/chart-manifests.js'

describe('NetworkPolicy (networkPolicy)', () => {
  const render = (values: Values = {}) => install({ values: merge({ networkPolicy: { enabled: true } }, values) })
  const policy = (chart: RenderedChart) => one<NetworkPolicy>(chart, 'NetworkPolicy')
  const chart = render()
  const egressTo = (chart: RenderedChart, port: number) => policy(chart).spec.egress.filter((r) => r.ports.some((p) => p.port === port))

  it("selects the gateway's pods only: not the helm test Pod, not the cache-warm Job", () => {
    const np = policy(chart)
    expect(np.apiVersion).toBe('networking.k8s.io/v1')
    expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress'])
    const selector = np.spec.podSelector.matchLabels
    expect(selects(selector, one<Deployment>(chart, 'Deployment').spec.template.metadata.labels)).toBe(true)
    expect(selects(selector, one(chart, 'Pod').metadata.labels)).toBe(false)
    // The component label is on the pods only: the Deployment's selector is immutable.
    expect(one<Deployment>(chart, 'Deployment').spec.selector.matchLabels['app.kubernetes.io/component']).toBeUndefined()
  })

  it('lets any pod of the namespace reach the proxy port, and only the monitoring namespace the admin port', () => {
    const [proxy, admin, ...rest] = policy(chart).spec.ingress
    expect(rest).toEqual([])
    expect(proxy).toEqual({ from: [{ podSelector: {} }], ports: [{ port: 8080, protocol: 'TCP' }] })
    expect(admin).toEqual({ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ port: 8081, protocol: 'TCP' }] })
  })

  it("says in NOTES.txt, beside an Ingress, that its controller is let in only by networkPolicy.ingress.proxyFrom", () => {
    // The controller runs in a namespace of its own: with proxyFrom empty, every request
    // through the Ingress waits on a connection the policy drops, the install green.
    const note = /NOTE: the Ingress .* networkPolicy\.ingress\.proxyFrom/
    const ingress = { enabled: true, hosts: [{ host: 'reports.example.org', paths: [{ path: '/', pathType: 'Prefix' }] }] }
    const notes = (chart: RenderedChart) => chart.notes.replace(/\s+/g, ' ')
    expect(notes(render({ ingress }))).toMatch(note)
    expect(notes(render({ ingress }))).toContain('kubernetes.io/metadata.name: ingress-nginx')
    expect(notes(render({ ingress, networkPolicy: { ingress: { proxyFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }] } } }))).not.toMatch(note)
    expect(notes(render())).not.toMatch(note)
    expect(notes(install({ values: { ingress } }))).not.toMatch(note)
  })

  it('follows the ports and takes more peers and another monitoring namespace label', () => {
    const ingress = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }
    const other = render({
      ports: { http: 9080, admin: 9081 },
      networkPolicy: { ingress: { proxyFrom: [ingress], adminNamespaceLabel: { key: 'example.com/monitoring', value: 'true' }, adminFrom: [{ podSelector: { matchLabels: { app: 'ops' } } }] } },
    })
    const [proxy, admin] = policy(other).spec.ingress
    expect(proxy).toEqual({ from: [{ podSelector: {} }, ingress], ports: [{ port: 9080, protocol: 'TCP' }] })
    expect(admin).toEqual({
      from: [{ namespaceSelector: { matchLabels: { 'example.com/monitoring': 'true' } } }, { podSelector: { matchLabels: { app: 'ops' } } }],
      ports: [{ port: 9081, protocol: 'TCP' }],
    })
  })

  it('lets the gateway reach cluster DNS (UDP and TCP 53) and the platform on 443, and nothing else without Redis', () => {
    const egress = policy(chart).spec.egress
    expect(egress).toHaveLength(2)
    expect(egressTo(chart, 53)).toEqual([
      {
        to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
    ])
    expect(egressTo(chart, 443)).toEqual([{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }], ports: [{ port: 443, protocol: 'TCP' }] }])
    expect(egressTo(chart, 6379)).toEqual([])
  })

  it("takes the platform's CIDRs and ports", () => {
    const other = render({ networkPolicy: { egress: { platform: { cidrs: ['203.0.113.0/24', '2001:db8::/32'], ports: [443, 8443] } } } })
    expect(egressTo(other, 8443)).toEqual([
      {
        to: [{ ipBlock: { cidr: '203.0.113.0/24' } }, { ipBlock: { cidr: '2001:db8::/32' } }],
        ports: [
          { port: 443, protocol: 'TCP' },
          { port: 8443, protocol: 'TCP' },
        ],
      },
    ])
    expect(egressTo(render({ networkPolicy: { egress: { platform: { cidrs: [] } } } }), 443)).toEqual([{ ports: [{ port: 443, protocol: 'TCP' }] }])
  })

  it('lets the gateway reach Redis on 6379 when Redis is configured, by selector or CIDR', () => {
    for (const values of [{ redis: { url: 'redis://redis:6379' } }, { redis: { existingSecret: { name: 'redis' } } }, { config: { redis: { url: 'redis://redis:6379' } } }]) {
      expect(egressTo(render(values), 6379), JSON.stringify(values)).toEqual([{ ports: [{ port: 6379, protocol: 'TCP' }] }])
    }
    const bySelector = render({
      redis: { url: 'redis://redis.redis.svc:6379' },
      networkPolicy: { egress: { redis: { podLabels: { 'app.kubernetes.io/name': 'redis' }, namespaceLabels: { 'kubernetes.io/metadata.name': 'redis' } } } },
    })
    expect(egressTo(bySelector, 6379)).toEqual([
      {
        ports: [{ port: 6379, protocol: 'TCP' }],
        to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'redis' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'redis' } } }],
      },
    ])
    const byCidr = render({ redis: { url: 'rediss://10.0.0.5:6380' }, networkPolicy: { egress: { redis: { cidrs: ['10.0.0.5/32'], ports: [6380] } } } })
    expect(egressTo(byCidr, 6380)).toEqual([{ ports: [{ port: 6380, protocol: 'TCP' }], to: [{ ipBlock: { cidr: '10.0.0.5/32' } }] }])
  })

  it('adds the Sentinel port only when config.redis.sentinels is set', () => {
    expect(egressTo(render({ redis: { url: 'redis://redis:6379' } }), 26379)).toEqual([])
    const sentinels = render({ config: { redis: { sentinels: [{ host: 'sentinel-0', port: 26379 }], sentinelName: 'mymaster' } } })
    expect(egressTo(sentinels, 26379)).toEqual([
      {
        ports: [
          { port: 6379, protocol: 'TCP' },
          { port: 26379, protocol: 'TCP' },
        ],
      },
    ])
  })

  it('lets the gateway reach the OpenTelemetry collector only when tracing is on, by its pods or anywhere on its ports', () => {
    expect(egressTo(chart, 4318)).toEqual([])
    const tracing = { endpoint: 'http://otel-collector.observability:4318' }
    expect(egressTo(render({ tracing }), 4318)).toEqual([{ ports: [{ port: 4318, protocol: 'TCP' }] }])
    const bySelector = render({
      tracing,
      networkPolicy: { egress: { collector: { podLabels: { 'app.kubernetes.io/name': 'opentelemetry-collector' }, namespaceLabels: { 'kubernetes.io/metadata.name': 'observability' } } } },
    })
    expect(egressTo(bySelector, 4318)).toEqual([
      {
        ports: [{ port: 4318, protocol: 'TCP' }],
        to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'opentelemetry-collector' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }],
      },
    ])
  })

  it("lets the gateway reach the teams' webhook receivers only when config.jobs.webhookHosts is set, by their pods or anywhere on their ports", () => {
    // An in-cluster receiver on a port of its own: the platform's rule (443) does not reach it.
    const hooks = { config: { jobs: { webhookHosts: ['hooks.dash.svc.cluster.local'] } } }
    expect(egressTo(chart, 8080)).toEqual([])
    expect(egressTo(render({ ...hooks, networkPolicy: { egress: { webhooks: { ports: [8080] } } } }), 8080)).toEqual([{ ports: [{ port: 8080, protocol: 'TCP' }] }])
    expect(egressTo(render({ networkPolicy: { egress: { webhooks: { ports: [8080] } } } }), 8080)).toEqual([])
    const bySelector = render({
      ...hooks,
      networkPolicy: { egress: { webhooks: { podLabels: { app: 'hooks' }, namespaceLabels: { 'kubernetes.io/metadata.name': 'dash' }, cidrs: ['198.51.100.0/24'], ports: [8080] } } },
    })
    expect(egressTo(bySelector, 8080)).toEqual([
      {
        ports: [{ port: 8080, protocol: 'TCP' }],
        to: [
          { podSelector: { matchLabels: { app: 'hooks' } }, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'dash' } } },
          { ipBlock: { cidr: '198.51.100.0/24' } },
        ],
      },
    ])
    // By default an https receiver, anywhere: its own rule, whatever the platform's CIDRs.
    const narrowPlatform = render({ ...hooks, networkPolicy: { egress: { platform: { cidrs: ['203.0.113.0/24'] } } } })
    expect(egressTo(narrowPlatform, 443)).toEqual([
      { ports: [{ port: 443, protocol: 'TCP' }], to: [{ ipBlock: { cidr: '203.0.113.0/24' } }] },
      { ports: [{ port: 443, protocol: 'TCP' }] },
    ])
  })

  // The chart knows the addresses the gateway reaches; a port that no egress rule opens
  // rendered a policy that blocked the platform (every call), Redis (served without it) or
  // the collector, with nothing said at the install.
  it.each([
    ['platform.baseUrl', { platform: { baseUrl: 'https://dsp-api.example.com:8443' } }, 8443, 'networkPolicy.egress.platform.ports'],
    ['platform.baseUrl', { platform: { baseUrl: 'http://dsp-api.example.com' } }, 80, 'networkPolicy.egress.platform.ports'],
    ['config.platform.baseUrl', { platform: { baseUrl: '' }, config: { platform: { baseUrl: 'https://dsp-api.example.com:9443' } } }, 9443, 'networkPolicy.egress.platform.ports'],
    ['platform.tokenUrl', { platform: { tokenUrl: 'https://login.example.com:8443/oauth/token' } }, 8443, 'networkPolicy.egress.platform.ports'],
    ['config.credentials.partner.baseUrl', { config: { credentials: { partner: { baseUrl: 'https://partner-api.example.com:8443' } } } }, 8443, 'networkPolicy.egress.platform.ports'],
    ['redis.url', { redis: { url: 'rediss://cache.example.net:6380' } }, 6380, 'networkPolicy.egress.redis.ports'],
    ['config.redis.cluster.1.port', { config: { redis: { cluster: [{ host: 'redis-0', port: 6379 }, { host: 'redis-1', port: 7001 }] } } }, 7001, 'networkPolicy.egress.redis.ports'],
    ['config.redis.sentinels.0.port', { config: { redis: { sentinels: [{ host: 'sentinel-0', port: 26380 }], sentinelName: 'mymaster' } } }, 26380, 'networkPolicy.egress.redis.sentinelPorts'],
    [
      'teams.dash.webhook.url',
      {
        teams: { ...TEAMS, dash: { keys: [`sha256:${'d'.repeat(64)}`], advertisers: [103], webhook: { url: 'http://hooks.dash.svc.cluster.local:8080/reports', secret: `whsec_${'A'.repeat(32)}` } } },
        config: { jobs: { webhookHosts: ['hooks.dash.svc.cluster.local'] } },
      },
      8080,
      'networkPolicy.egress.webhooks.ports',
    ],
    ['tracing.endpoint', { tracing: { endpoint: 'http://otel-collector.observability:14318' } }, 14318, 'networkPolicy.egress.collector.ports'],
  ])('refuses %s on a port no egress rule opens, naming the list to add it to', (value, values, port, list) => {
    expect(() => render(values)).toThrow(`${list}: ${value} is on port ${port}, which no egress rule of the NetworkPolicy opens`)
    // Opened by its own list, or by an extra rule: rendered.
    const opened = merge(values, { networkPolicy: { egress: { extra: [{ ports: [{ port, protocol: 'TCP' }] }] } } })
    expect(egressTo(render(opened), port)).toHaveLength(1)
    expect(() => render(merge(values, { networkPolicy: { egress: { extra: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8' } }] }] } } }))).not.toThrow()
    expect(() => install({ values })).not.toThrow()
  })

  it('takes the ports of the addresses it knows when their lists hold them: the defaults, or the ones named', () => {
    expect(() => render({ platform: { baseUrl: 'https://dsp-api.example.com', tokenUrl: '/oauth/token' }, redis: { url: 'redis://redis:6379/0' }, tracing: { endpoint: 'http://otel-collector.observability:4318' } })).not.toThrow()
    expect(() => render({ platform: { baseUrl: 'https://dsp-api.example.com:8443' }, networkPolicy: { egress: { platform: { ports: [443, 8443] } } } })).not.toThrow()
    expect(() => render({ redis: { url: 'rediss://[fd00::5]:6380' }, networkPolicy: { egress: { redis: { ports: [6380] } } } })).not.toThrow()
    expect(() => render({ redis: { url: 'redis://[fd00::5]' } })).not.toThrow()
    expect(() => render({ config: { redis: { sentinels: [{ host: 'sentinel-0', port: 26379 }], sentinelName: 'mymaster' } } })).not.toThrow()
    expect(() => render({ config: { jobs: { webhookHosts: ['hooks.example.com'] } }, networkPolicy: { egress: { extra: [{ ports: [{ port: 7000, endPort: 7005, protocol: 'TCP' }] }] } }, redis: { url: 'redis://redis:7003' } })).not.toThrow()
  })

  it('appends extra egress rules as given', () => {
    const extra = { to: [{ ipBlock: { cidr: '198.51.100.0/24' } }], ports: [{ port: 443, protocol: 'TCP' }] }
    expect(policy(render({ networkPolicy: { egress: { extra: [extra] } } })).spec.egress.at(-1)).toEqual(extra)
  })
})

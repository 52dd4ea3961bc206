import { describe, expect, it } from 'vitest'
import { afterEmptySegments, servedByAdminListener, servedByProxyListener } from '../../src/http/listener-paths.js'

describe('which listener serves a path', () => {
  it('names the admin listener for /admin, /console, /metrics and /docs, each whole segment, and nothing else', () => {
    for (const path of ['/admin', '/admin/', '/admin/status', '/console', '/console/console.js', '/metrics', '/docs', '/docs/json']) expect(servedByAdminListener(path), path).toBe(true)
    for (const path of ['/', '', '/administration', '/metricsx', '/api/v1/admin', '/healthz', '/readyz', '/openapi.json', '//admin']) expect(servedByAdminListener(path), path).toBe(false)
  })

  it('names the proxy listener for the paths under /api/', () => {
    for (const path of ['/api/v1/campaign/get', '/api/v1/jobs/abc', '/api/']) expect(servedByProxyListener(path), path).toBe(true)
    for (const path of ['/api', '/admin/status', '/', '/apix/v1']) expect(servedByProxyListener(path), path).toBe(false)
  })

  it('reads a path after its leading empty segments, null where it has none', () => {
    expect(afterEmptySegments('//api/v1/campaign/get')).toBe('/api/v1/campaign/get')
    expect(afterEmptySegments('///admin/status')).toBe('/admin/status')
    expect(afterEmptySegments('//')).toBe('/')
    for (const path of ['/api/v1/campaign/get', '/', '', '/a//b']) expect(afterEmptySegments(path), path).toBeNull()
  })
})

/**
 * The admin listener's OpenAPI document (GET /admin/openapi.json, docs/admin-openapi.json).
 * Two independent validators check the document itself; the admin listener's route table
 * is compared with its paths; then every admin call is made against a gateway in front of
 * the platform sandbox, with Redis and a teams file, and each answer (status, headers,
 * body) is checked against the document's response for that operation and status, with
 * no property the document does not declare.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { parse as parseYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { renderAdminDocument } from '../../src/cli/openapi-render.js'
import { KEYS, TEAMS_YAML, TEST_GATEWAY_SECRET, buildGateway, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { documentedOperations, itIsValidAndCommitted, pointer, resolveRef, routeTable, type Json } from '../helpers/openapi-doc.js'
import { brokenHeadAnswers, rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'

type Doc = { openapi: string; paths: Record<string, Record<string, Json>>; components: Json }

const COMMITTED = new URL('../../docs/admin-openapi.json', import.meta.url)
const ADMIN_TOKEN = 'admin-openapi-admin-token-0123456789'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-10-01&dateTo=2026-10-02'
// The calls here wait on Redis's answer, however slow a loaded machine makes it: a command
// timeout longer than any test's (the test's timeout is the bound) rather than the default
// 250 ms, past which a purge is answered 503 GW_REDIS_UNAVAILABLE.
const REDIS_COMMAND_TIMEOUT_MS = 60_000

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()
let gw: TestGateway
let dir: string
let doc: Doc
// One validator of the served document for the file: each response schema it checks an answer
// against is compiled once, at its first answer (`mismatches`), not again for each answer.
let ajv: Ajv2020

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rgw-admin-openapi-'))
  writeFileSync(join(dir, 'teams.yaml'), TEAMS_YAML)
  writeFileSync(join(dir, 'config.yaml'), `redis:\n  commandTimeout: ${REDIS_COMMAND_TIMEOUT_MS}ms\n`)
  const env = {
    CONFIG_FILE: join(dir, 'config.yaml'),
    PLATFORM_BASE_URL: sandbox.url,
    ...sandboxLoginEnv(sandbox),
    ADMIN_TOKEN,
    TEAMS_FILE: join(dir, 'teams.yaml'),
    REDIS_URL: redis.server.url,
    GATEWAY_SECRET: TEST_GATEWAY_SECRET,
    LOG_LEVEL: 'info',
  }
  gw = await buildGateway(loadConfig({ env }), { configSource: { env } })
  expect(gw.config.redis.commandTimeoutMs).toBe(REDIS_COMMAND_TIMEOUT_MS)
  const res = await gw.admin.inject({ method: 'GET', url: '/admin/openapi.json', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(res.statusCode).toBe(200)
  doc = res.json<Doc>()
  ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
  ajv.addSchema(closed(doc) as Json, 'admin-openapi.json')
})

afterAll(async () => {
  await gw?.close()
  rmSync(dir, { recursive: true, force: true })
})




/** The document with every object schema closed: an answer's property the document does not declare fails. */
function closed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closed)
  if (!node || typeof node !== 'object') return node
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, closed(v)])) as Json
  if (out.properties && typeof out.properties === 'object' && !('additionalProperties' in out) && !('patternProperties' in out)) out.unevaluatedProperties = false
  return out
}

interface Answer {
  status: number
  headers: Record<string, unknown>
  body: string
}

/** Checks one answer against the document's operation; returns what does not match. */
function mismatches(path: string, method: string, answer: Answer): string[] {
  const op = doc.paths[path]?.[method]
  if (!op) return [`${method.toUpperCase()} ${path} is not in the document`]
  const responses = op.responses as Record<string, unknown>
  const key = String(answer.status)
  if (!(key in responses)) return [`${answer.status} is not a documented answer of ${method.toUpperCase()} ${path}`]
  const response = resolveRef(doc, responses[key])
  const problems: string[] = []
  const type = String(answer.headers['content-type'] ?? '').split(';')[0]!.trim()
  for (const [name, h] of Object.entries((response.headers ?? {}) as Record<string, unknown>)) {
    const value = answer.headers[name]
    if (value === undefined) {
      // A download's name is sent with a CSV alone; a document's coding where the call accepts gzip alone.
      if ((name !== 'content-disposition' || type === 'text/csv') && name !== 'content-encoding') problems.push(`header ${name} is declared but not sent`)
      continue
    }
    if (!ajv.validate(resolveRef(doc, h).schema as Json, value)) problems.push(`header ${name}: ${String(value)}: ${ajv.errorsText()}`)
  }
  const content = response.content as Record<string, Json> | undefined
  if (!content) return problems
  // A media type range (`*/*`) declares every type it covers (OpenAPI 3.1, 4.8.14).
  const declared = [type, `${type.split('/')[0]}/*`, '*/*'].find((t) => t in content)
  if (!declared) return [...problems, `content type ${type} is not declared for ${key}`]
  const body = type === 'application/json' ? (JSON.parse(answer.body) as unknown) : answer.body
  const validate = ajv.getSchema(`admin-openapi.json${pointer('paths', path, method, 'responses', key, 'content', declared, 'schema')}`)
  if (!validate) return [...problems, `no schema for ${key} ${declared}`]
  if (!validate(body)) problems.push(`body ${answer.body.slice(0, 300)}: ${ajv.errorsText(validate.errors)}`)
  return problems
}

describe('the admin listener\'s OpenAPI document', () => {
  it('is served at GET /admin/openapi.json behind the admin token, like every /admin/* call', async () => {
    const refused = await gw.admin.inject({ method: 'GET', url: '/admin/openapi.json' })
    expect(refused.statusCode).toBe(401)
    expect(refused.json()).toMatchObject({ code: 'GW_UNAUTHORIZED' })
    expect((await gw.proxy.inject({ method: 'GET', url: '/admin/openapi.json' })).statusCode).toBe(404)
  })

  itIsValidAndCommitted(COMMITTED, renderAdminDocument, () => doc)

  it('lists every route of the admin listener, with its methods, and only those', () => {
    const documented = documentedOperations(doc)
    const table = routeTable(gw.admin.printRoutes({ commonPrefix: false }))
    expect(table.size).toBeGreaterThanOrEqual(15)
    const served = new Set<string>()
    for (const [url, methods] of table) {
      // Under /docs/ Swagger UI's files are one path (`/docs/static/{file}`) and its page `/docs`: the other spellings of them are not listed.
      if (url.startsWith('/docs/') && !['/docs/json', '/docs/yaml'].includes(url)) {
        // Its files' wildcard (`/docs/static/*`, which printRoutes writes under `/docs/`).
        if (url.includes('*')) served.add('GET /docs/static/{file}')
        continue
      }
      // The catch-all under /admin/ is no call: it answers every path no call serves 404, behind the token.
      if (url.includes('*')) continue
      // HEAD of a GET is Fastify's own.
      for (const method of methods.filter((m) => m !== 'HEAD')) served.add(`${method} ${url.replace(/:(\w+)/g, '{$1}')}`)
    }
    expect([...documented].sort()).toEqual([...served].sort())
  })

  it('says which calls need the admin token, and gives every GW_* code it names a schema', () => {
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const op of Object.values(item)) expect(op.security, path).toEqual(path.startsWith('/admin/') ? undefined : [])
    }
    const text = JSON.stringify(doc.paths)
    for (const [, code] of text.matchAll(/#\/components\/schemas\/(GW_\w+)/g)) expect((doc.components.schemas as Json)[code!], code).toBeDefined()
  })

  it('describes every answer of real admin calls: status, headers and body', async () => {
    // Usage to report: a miss, a hit, and a limited team past its limit (a 429).
    for (const key of [KEYS.all, KEYS.all, KEYS.limited, KEYS.limited, KEYS.limited, KEYS.limited]) await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': key } })
    const revoked = sandbox.issueToken()
    sandbox.revokeToken(revoked)
    const fresh = sandbox.issueToken()
    const token = (body: unknown) => ({ 'content-type': 'application/json', payload: JSON.stringify(body) })
    const calls: { what: string; method: string; url: string; path?: string; body?: ReturnType<typeof token>; auth?: boolean; status: number }[] = [
      { what: 'token', method: 'GET', url: '/admin/token', status: 200 },
      { what: 'token replaced', method: 'PUT', url: '/admin/token', body: token({ token: fresh }), status: 200 },
      { what: 'the same token', method: 'PUT', url: '/admin/token', body: token({ token: fresh }), status: 200 },
      { what: 'a token too short', method: 'PUT', url: '/admin/token', body: token({ token: 'short' }), status: 400 },
      { what: 'a revoked token', method: 'PUT', url: '/admin/token', body: token({ token: revoked }), status: 422 },
      { what: 'login again', method: 'POST', url: '/admin/token/refresh', status: 200 },
      { what: 'credentials', method: 'GET', url: '/admin/credentials', status: 200 },
      { what: 'a credential', method: 'GET', url: '/admin/credentials/default/token', path: '/admin/credentials/{name}/token', status: 200 },
      { what: 'no such credential', method: 'GET', url: '/admin/credentials/nope/token', path: '/admin/credentials/{name}/token', status: 404 },
      { what: 'a credential\'s token replaced', method: 'PUT', url: '/admin/credentials/default/token', path: '/admin/credentials/{name}/token', body: token({ token: sandbox.issueToken() }), status: 200 },
      { what: 'a credential logs in again', method: 'POST', url: '/admin/credentials/default/token/refresh', path: '/admin/credentials/{name}/token/refresh', status: 200 },
      { what: 'usage', method: 'GET', url: '/admin/usage', status: 200 },
      { what: 'usage as CSV', method: 'GET', url: '/admin/usage?format=csv&team=limited', status: 200 },
      { what: 'usage in an unknown format', method: 'GET', url: '/admin/usage?format=xml', status: 400 },
      { what: 'usage of no team', method: 'GET', url: '/admin/usage?team=nobody', status: 404 },
      { what: 'status', method: 'GET', url: '/admin/status', status: 200 },
      { what: 'audit', method: 'GET', url: '/admin/audit', status: 200 },
      { what: 'cluster', method: 'GET', url: '/admin/cluster', status: 200 },
      { what: 'this document', method: 'GET', url: '/admin/openapi.json', status: 200 },
      { what: 'no admin token', method: 'GET', url: '/admin/status', auth: false, status: 401 },
      { what: 'purge one advertiser', method: 'DELETE', url: '/admin/cache?advertiserId=101', path: '/admin/cache', status: 200 },
      { what: 'purge with a bad advertiser', method: 'DELETE', url: '/admin/cache?advertiserId=x', path: '/admin/cache', status: 400 },
      { what: 'purge all, a dry run', method: 'DELETE', url: '/admin/cache?dryRun=1', path: '/admin/cache', status: 200 },
      { what: 'purge with a misspelt parameter', method: 'DELETE', url: '/admin/cache?advertiserID=101', path: '/admin/cache', status: 400 },
      { what: 'purge all', method: 'DELETE', url: '/admin/cache', status: 200 },
      { what: 'reload', method: 'POST', url: '/admin/reload', status: 200 },
      { what: 'metrics', method: 'GET', url: '/metrics', auth: false, status: 200 },
      { what: 'healthz', method: 'GET', url: '/healthz', auth: false, status: 200 },
      { what: 'readyz', method: 'GET', url: '/readyz', auth: false, status: 200 },
      { what: 'console', method: 'GET', url: '/console', auth: false, status: 200 },
      { what: 'console style', method: 'GET', url: '/console/console.css', auth: false, status: 200 },
      { what: 'console icon', method: 'GET', url: '/console/icon.svg', auth: false, status: 200 },
      { what: 'no such console script', method: 'GET', url: '/console/nope.js', path: '/console/{file}', auth: false, status: 404 },
      { what: 'Swagger UI', method: 'GET', url: '/docs', auth: false, status: 200 },
      { what: 'the proxy\'s document', method: 'GET', url: '/docs/json', auth: false, status: 200 },
      { what: 'the proxy\'s document as YAML', method: 'GET', url: '/docs/yaml', auth: false, status: 200 },
      { what: 'a file of Swagger UI', method: 'GET', url: '/docs/static/swagger-ui.css', path: '/docs/static/{file}', auth: false, status: 200 },
    ]
    const problems: string[] = []
    for (const call of calls) {
      const res = await gw.admin.inject({
        method: call.method as 'GET',
        url: call.url,
        headers: { ...(call.auth === false ? {} : { authorization: `Bearer ${ADMIN_TOKEN}` }), ...(call.body ? { 'content-type': call.body['content-type'] } : {}) },
        ...(call.body ? { payload: call.body.payload } : {}),
      })
      const answer = { status: res.statusCode, headers: res.headers, body: res.body }
      if (answer.status !== call.status) problems.push(`${call.what}: status ${answer.status}, expected ${call.status}: ${answer.body.slice(0, 200)}`)
      for (const p of mismatches(call.path ?? call.url.split('?')[0]!, call.method.toLowerCase(), answer)) problems.push(`${call.what}: ${p}`)
    }
    expect(problems).toEqual([])
  })

  it('describes a refused reload\'s answer: its problems each apart (errors), with the setting, the file and the line', async () => {
    const file = join(dir, 'teams.yaml')
    writeFileSync(file, `${TEAMS_YAML}  broken:\n    keys: []\n    advertisers: [0]\n`)
    try {
      const res = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(res.statusCode).toBe(422)
      expect(res.json<{ errors: unknown[] }>().errors).toContainEqual(expect.objectContaining({ path: 'teams.broken.advertisers.0', variable: 'TEAMS_FILE', file, line: expect.any(Number) }))
      expect(mismatches('/admin/reload', 'post', { status: res.statusCode, headers: res.headers, body: res.body })).toEqual([])
    } finally {
      writeFileSync(file, TEAMS_YAML)
    }
  })

  // A key of TEAMS_FILE beside teams: (a setting of CONFIG_FILE's, or a team not indented
  // under teams:) was answered with variable, file and line null, its message alone saying
  // where (black-box pass, session 135).
  it('places a refused reload\'s key of TEAMS_FILE other than teams: at its file and line', async () => {
    const file = join(dir, 'teams.yaml')
    writeFileSync(file, `${TEAMS_YAML}cache:\n  ttl: { recent: 3m }\nstray:\n  keys: []\n  advertisers: [101]\n`)
    const lines = readFileSync(file, 'utf8').split('\n')
    try {
      const res = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(res.statusCode).toBe(422)
      expect(res.json<{ errors: unknown[] }>().errors).toEqual([
        expect.objectContaining({ message: expect.stringContaining('cache: not a teams setting'), variable: 'TEAMS_FILE', file, line: lines.indexOf('cache:') + 1 }),
        expect.objectContaining({ message: expect.stringContaining('stray: a team (keys, advertisers) outside teams:'), variable: 'TEAMS_FILE', file, line: lines.indexOf('stray:') + 1 }),
      ])
    } finally {
      writeFileSync(file, TEAMS_YAML)
    }
  })

  it('types the purges\' dryRun as a boolean or 1, true, 0, false, and takes each value it names as a query writes it', async () => {
    const entryUrl = encodeURIComponent(REPORT)
    for (const [path, query] of [['/admin/cache', 'advertiserId=999999'], ['/admin/cache/entry', `url=${entryUrl}`]] as const) {
      const params = (doc.paths[path]!.delete!.parameters as { name: string; schema: { type: unknown; enum: unknown[] } }[])
      const schema = params.find((p) => p.name === 'dryRun')!.schema
      // A client generated from the document takes `dryRun: true`, and sends it as `dryRun=true`.
      expect(schema.type, path).toEqual(['boolean', 'string'])
      expect(schema.enum, path).toEqual([true, false, '1', 'true', '0', 'false'])
      for (const value of schema.enum) {
        const res = await gw.admin.inject({ method: 'DELETE', url: `${path}?${query}&dryRun=${String(value)}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
        expect(res.statusCode, `${path} dryRun=${String(value)}: ${res.body}`).toBe(200)
        expect(res.json<{ dryRun: boolean }>().dryRun, `${path} dryRun=${String(value)}`).toBe(value === true || value === '1' || value === 'true')
      }
      const refused = await gw.admin.inject({ method: 'DELETE', url: `${path}?${query}&dryRun=yes`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(refused.json(), path).toMatchObject({ statusCode: 400, code: 'GW_BAD_REQUEST', message: expect.stringMatching(/^dryRun: must be `true` or `1`/) })
    }
  })

  it('names in its words only the fields its answers have, the parameters its calls take, and settings', () => {
    // A name in backticks that is written like a field (`suspendedUntil`) and is none of these
    // sends a reader to look for what no answer holds.
    const names = new Set<string>()
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(collect)
      if (!node || typeof node !== 'object') return
      const n = node as Json
      if (n.properties && typeof n.properties === 'object') for (const k of Object.keys(n.properties)) names.add(k)
      if (typeof n.name === 'string' && typeof n.in === 'string') names.add(n.name)
      Object.values(n).forEach(collect)
    }
    collect(doc)
    const settings = (value: unknown): void => {
      if (!value || typeof value !== 'object' || Array.isArray(value)) return
      for (const [k, v] of Object.entries(value)) {
        names.add(k)
        settings(v)
      }
    }
    settings(parseYaml(readFileSync(new URL('../../config/default.yaml', import.meta.url), 'utf8')))
    // The misspelt parameter a refusal's message quotes, and Node's option for the head's size.
    for (const other of ['advertiserID', 'maxHeaderSize']) names.add(other)
    const strays: string[] = []
    const words = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((v) => words(v, at))
      if (!node || typeof node !== 'object') return
      for (const [k, v] of Object.entries(node)) {
        if ((k === 'description' || k === 'summary') && typeof v === 'string') {
          for (const [, name] of v.matchAll(/`([a-z][a-zA-Z0-9]*[A-Z][a-zA-Z0-9]*)`/g)) if (!names.has(name!)) strays.push(`${at}: \`${name}\``)
        } else words(v, at)
      }
    }
    for (const [path, item] of Object.entries(doc.paths)) words(item, path)
    words(doc.components, 'components')
    expect(strays).toEqual([])
  })

  it('declares, required, the headers the contract puts on every /admin/* answer and on the console\'s and Swagger UI\'s files', () => {
    const missing: string[] = []
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, unknown>)) {
          // Every /admin/* answer, refusals included; the console's and Swagger UI's pages and files as served, and their 404s.
          const page = (path.startsWith('/console') || path.startsWith('/docs')) && (/^[23]/.test(status) || status === '404')
          const wanted = path.startsWith('/admin/') ? ['cache-control', 'x-frame-options', 'x-content-type-options'] : page ? ['content-security-policy', 'x-frame-options', 'x-content-type-options', 'cross-origin-opener-policy'] : []
          const headers = (resolveRef(doc, response).headers ?? {}) as Record<string, unknown>
          for (const name of wanted) if (resolveRef(doc, headers[name]).required !== true) missing.push(`${method.toUpperCase()} ${path} ${status}: ${name}`)
        }
      }
    }
    expect(missing).toEqual([])
  })

  it('describes the 431 the listener answers to any call whose head is larger than Node reads (contract: "on either listener")', async () => {
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    const { port } = gw.admin.server.address() as AddressInfo
    const problems: string[] = []
    for (const [method, url, path] of [['GET', '/admin/status', '/admin/status'], ['PUT', '/admin/token', '/admin/token'], ['GET', '/admin/credentials/default/token', '/admin/credentials/{name}/token'], ['GET', '/healthz', '/healthz'], ['GET', '/metrics', '/metrics'], ['GET', '/console', '/console']] as const) {
      const answer = await rawRequest(port, rawHttp(method, url, { key: null, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-padding': 'a'.repeat(17_000) } }))
      if (answer.status !== 431) problems.push(`${method} ${url}: status ${answer.status}, expected 431`)
      for (const p of mismatches(path, method.toLowerCase(), answer)) problems.push(`${method} ${url}: ${p}`)
    }
    expect(problems).toEqual([])
  })

  it('describes the 400 and the 408 the listener answers whatever the path, /healthz, /metrics and /console included', async () => {
    // A head not whole within server.headersTimeout is answered 408 as one not whole within
    // server.requestTimeout: waited out on a gateway of its own with short ones.
    const adminPort = async (yaml: string) => {
      const built = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, yaml))
      await built.admin.listen({ host: '127.0.0.1', port: 0 })
      return (built.admin.server.address() as AddressInfo).port
    }
    const port = await adminPort(TEAMS_YAML)
    const quickPort = await adminPort(`${TEAMS_YAML}server:\n  headersTimeout: 300ms\n  requestTimeout: 600ms\n`)
    const auth = `authorization: Bearer ${ADMIN_TOKEN}\r\n`
    const problems: string[] = []
    const routes = [['GET', '/healthz', '/healthz'], ['GET', '/metrics', '/metrics'], ['GET', '/console', '/console'], ['GET', '/admin/status', '/admin/status']] as const
    for (const { method, url, path, expected, answer } of await brokenHeadAnswers(port, routes, auth, quickPort)) {
      if (answer.status !== expected) problems.push(`${method} ${url}: status ${answer.status}, expected ${expected}`)
      for (const p of mismatches(path, method.toLowerCase(), answer)) problems.push(`${method} ${url} (${expected}): ${p}`)
    }
    expect(problems).toEqual([])
  })

  it('says what a token put in by PUT /admin/token reaches without Redis: the replica called, until it restarts', async () => {
    // A replica without Redis that restarts logs in again: the rotation is not kept.
    for (const path of ['/admin/token', '/admin/credentials/{name}/token']) {
      const description = (doc.paths[path]?.put as { description: string }).description
      expect(description).toContain('without Redis, on the replica called only, until it restarts')
      expect(description).not.toMatch(/uses it on every replica \(through Redis when configured\), replicas that start or restart later included/)
    }
  })

  it('describes the refusal of a replica without an admin token', async () => {
    const bare = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }))
    const res = await bare.admin.inject({ method: 'GET', url: '/admin/usage', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.statusCode).toBe(503)
    expect(mismatches('/admin/usage', 'get', { status: res.statusCode, headers: res.headers, body: res.body })).toEqual([])
  })
})

/**
 * The typed client as an app developer installs it: `npm pack` of packages/client, the
 * tarball installed in an empty directory outside the workspace (its declared dependencies
 * from the registry, nothing of the workspace), type-checked there, and run there against a
 * gateway in front of the platform sandbox on Node 20 (the system's), 22 (the `node@22`
 * package of the npm registry) and 24 (the `node` devDependency the suite runs on), as an ES
 * module and by a CommonJS app's require(), and in
 * Chromium: a page that imports the installed files as they are (an import map, no bundler),
 * served from the origin that also routes /api/v1/ to the gateway, as an ingress would.
 * In npm run test:slow (npm install from the registry, a tsc run, three runtimes and a
 * browser, seconds of processes each); npm test checks the client's calls and types in
 * process (test/integration/typed-client.test.ts).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { promisify } from 'node:util'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { needTool, TOOLS } from '../helpers/missing-tools.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CLIENT = join(ROOT, 'packages/client')
const TSC = join(ROOT, 'node_modules/.bin/tsc')

/** The Node 22 binary of the registry's `node@22`, installed once per machine beside other runs' (a fresh folder renamed into place). */
const NODE_22_HOME = join(tmpdir(), 'report-gateway-test-node-22')

const env = useSandboxGateway()

/** npm with none of the `npm_*` settings of the run that started this one (npm test's own). */
function npm(args: string[], cwd: string): string {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')))
  return execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, env: clean, encoding: 'utf8', timeout: 180_000, stdio: ['ignore', 'pipe', 'pipe'] })
}

/** `node --version` of a binary, or null when it does not run. */
function versionOf(node: string): string | null {
  const run = spawnSync(node, ['--version'], { encoding: 'utf8' })
  return run.status === 0 ? run.stdout.trim() : null
}

/** The system's Node 20, if the machine has one outside node_modules. */
function node20(): string | null {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) if (versionOf(candidate)?.startsWith('v20.')) return candidate
  return null
}

/** Node 22 from the registry (`node@22`, whose install script fetches the binary package of this platform), installed once. */
function node22(): string | null {
  const binary = join(NODE_22_HOME, 'node_modules/node/bin/node')
  if (versionOf(binary)?.startsWith('v22.')) return binary
  const fresh = `${NODE_22_HOME}.${process.pid}`
  try {
    mkdirSync(fresh, { recursive: true })
    writeFileSync(join(fresh, 'package.json'), '{"private": true}\n')
    npm(['install', '--no-save', 'node@22'], fresh)
    rmSync(NODE_22_HOME, { recursive: true, force: true })
    renameSync(fresh, NODE_22_HOME)
  } catch {
    rmSync(fresh, { recursive: true, force: true })
  }
  return versionOf(binary)?.startsWith('v22.') ? binary : null
}

// An app of its own: a report, its revalidation, a platform call by its path, a refusal, no
// listener at all, and two redirects (REDIRECTS): one to the gateway, one to another origin
// that a call asks fetch to follow.
const APP = `import { createGatewayClient, GatewayError } from '@report-gateway/client'

const [baseUrl, apiKey] = process.argv.slice(2)
const client = createGatewayClient({ baseUrl, apiKey })
const query = { advertiserId: 101, dateFrom: '2026-03-02', dateTo: '2026-03-08', byDate: true }
const first = await client.report('campaigns', query)
const second = await client.report('campaigns', query)
const listed = await client.call('POST', '/api/v1/campaign/get', { query: { per_page: 50 }, body: { userId: 101 } })
const failure = async (call) => call.then(() => null, (err) => ({ gatewayError: err instanceof GatewayError, code: err.code, status: err.status }))
const redirect = async (call) => call.then(() => null, (err) => ({ code: err.code, status: err.status, location: err.location }))
console.log(JSON.stringify({
  node: process.version,
  rows: first.rows.map((row) => row.date),
  caches: [first.cache, second.cache, second.revalidated],
  cacheStatus: second.cacheStatus,
  campaigns: listed.body.data.map((c) => c.userId),
  own304: await client.report('campaigns', query, { headers: { 'if-none-match': first.etag } }).then((a) => [a.status, a.notModified, a.report]),
  trace: await failure(client.api.TRACE('/api/v1/campaign/get')),
  refused: await failure(createGatewayClient({ baseUrl, apiKey: 'rgw_not_a_key_of_any_team_000000000000000' }).report('campaigns', query)),
  network: await failure(createGatewayClient({ baseUrl: 'http://127.0.0.1:1', apiKey }).report('campaigns', query)),
  moved: await redirect(client.report('creatives', query)),
  elsewhere: await redirect(client.api.GET('/api/v1/report/{split}/get', { params: { path: { split: 'adPlacementPositions' }, query }, redirect: 'follow' })),
}))
`

// A CommonJS app's require() of the ES module (Node 20.19+, 22.12+ and 24 load one without top-level await).
const CJS_APP = `const { createGatewayClient, GatewayError } = require('@report-gateway/client')

const [baseUrl, apiKey] = process.argv.slice(2)
const query = { advertiserId: 101, dateFrom: '2026-03-02', dateTo: '2026-03-04', byDate: true }
createGatewayClient({ baseUrl, apiKey }).report('campaigns', query).then(async (answer) => {
  const refused = await createGatewayClient({ baseUrl, apiKey: 'rgw_not_a_key_of_any_team_000000000000000' }).report('campaigns', query).catch((err) => ({ gatewayError: err instanceof GatewayError, code: err.code }))
  console.log(JSON.stringify({ node: process.version, rows: answer.rows.length, refused }))
})
`

// A CommonJS module of a TypeScript app (a .cts file under NodeNext: its import is a require()).
const TYPED_CJS_APP = `import { createGatewayClient, GatewayError } from '@report-gateway/client'

export async function rows(baseUrl: string, apiKey: string): Promise<number | string> {
  return createGatewayClient({ baseUrl, apiKey }).report('campaigns', { advertiserId: 101, dateFrom: '2026-03-02', dateTo: '2026-03-04' }).then((answer) => answer.rows.length, (err: unknown) => (err instanceof GatewayError ? err.code : 'other'))
}
`

// The same calls as a TypeScript app sees them: the declarations of the tarball, not of the workspace.
const TYPED_APP = `import { createGatewayClient, GatewayError, type ReportAnswer, type ReportRow, type PlatformAnswer, type ErrorCode } from '@report-gateway/client'

const client = createGatewayClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'k' })
export async function read(): Promise<number> {
  const answer: ReportAnswer = await client.report('campaigns', { advertiserId: 101, dateFrom: '2026-03-02', dateTo: '2026-03-08', byDate: true })
  const row: ReportRow | undefined = answer.rows[0]
  const listed: PlatformAnswer<{ data: unknown[] }> = await client.call('POST', '/api/v1/campaign/get', { body: { userId: 101 } })
  const { response } = await client.api.POST('/api/v1/campaign/get', { body: { userId: 101 } })
  // @ts-expect-error a platform path starts with /api/v1/
  await client.call('GET', '/admin/token')
  // @ts-expect-error advertiserId is a number
  await client.report('campaigns', { advertiserId: 'x', dateFrom: '2026-03-02', dateTo: '2026-03-08' })
  // @ts-expect-error a POST report form names its campaigns: the platform answers 422 without them
  await client.reportByBody('campaigns', { advertiserId: 101, dateFrom: '2026-03-02', dateTo: '2026-03-08' })
  const mine = await client.report('campaigns', { advertiserId: 101, dateFrom: '2026-03-02', dateTo: '2026-03-08' }, { headers: { 'if-none-match': answer.etag ?? '*' } })
  // @ts-expect-error a 304 to the caller's own validator has no rows
  void mine.rows.length
  const kept: number = mine.notModified ? 0 : mine.rows.length
  return (row?.impressions ?? 0) + listed.body.data.length + response.status + kept
}
export function codeOf(err: unknown): ErrorCode | null {
  return err instanceof GatewayError ? err.code : null
}
export function whereTo(err: GatewayError): string | null {
  return err.code === 'CLIENT_REDIRECT' ? err.location : null
}
`

// A dashboard page of an app: the client from the app's node_modules, by an import map.
const PAGE = `<!doctype html>
<script type="importmap">{"imports": {"@report-gateway/client": "/node_modules/@report-gateway/client/dist/index.js", "openapi-fetch": "/node_modules/openapi-fetch/dist/index.mjs"}}</script>
<script type="module">
import { createGatewayClient, GatewayError } from '@report-gateway/client'
const key = new URLSearchParams(location.search).get('key')
const gateway = createGatewayClient({ baseUrl: location.origin, apiKey: key })
const query = { advertiserId: 102, dateFrom: '2026-03-02', dateTo: '2026-03-04', byDate: true }
try {
  const first = await gateway.report('campaigns', query)
  const second = await gateway.report('campaigns', query)
  const listed = await gateway.call('POST', '/api/v1/campaign/get', { body: { userId: 102 } })
  const refused = await createGatewayClient({ baseUrl: location.origin, apiKey: 'rgw_not_a_key_of_any_team_000000000000000' }).report('campaigns', query).catch((err) => ({ gatewayError: err instanceof GatewayError, code: err.code, status: err.status }))
  const moved = await gateway.report('creatives', query).catch((err) => ({ code: err.code, status: err.status, location: err.location }))
  window.results = { rows: first.rows.length, caches: [first.cache, second.cache, second.revalidated], campaigns: listed.body.data.length, refused, moved }
} catch (err) {
  window.results = { error: String(err) }
}
</script>`

/**
 * Each TypeScript example of the package's README as its own module of an app, the names it
 * uses but does not declare (the client's exports it does not import, the `gateway`,
 * `query`, `baseUrl`… of the examples before it) declared ahead of it, so that each is
 * type-checked as written.
 */
function readmeExamples(): string[] {
  const readme = readFileSync(join(CLIENT, 'README.md'), 'utf8')
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)
  const given: Record<string, string> = {
    gateway: 'declare const gateway: ReturnType<typeof client.createGatewayClient>',
    query: 'declare const query: client.ReportQuery',
    baseUrl: 'declare const baseUrl: string',
    apiKey: 'declare const apiKey: string',
    dateFrom: 'declare const dateFrom: string',
    dateTo: 'declare const dateTo: string',
    myEtag: 'declare let myEtag: string',
    myRows: 'declare let myRows: client.ReportRow[]',
    show: 'declare function show(rows: client.ReportRow[]): void',
    process: 'declare const process: { env: Record<string, string | undefined> }',
  }
  return blocks.map((block) => {
    const imported = new Set([...block.matchAll(/import \{([^}]*)\}/g)].flatMap((m) => m[1]!.split(',').map((name) => name.trim())))
    const exports = ['createGatewayClient', 'GatewayError', 'answerError'].filter((name) => new RegExp(`\\b${name}\\b`).test(block) && !imported.has(name))
    const free = Object.keys(given).filter((name) => new RegExp(`(?<![.\\w'])${name}\\b`).test(block) && !new RegExp(`(const|let|function) ${name}\\b`).test(block))
    return [
      "import type * as client from '@report-gateway/client'",
      ...(exports.length > 0 ? [`import { ${exports.join(', ')} } from '@report-gateway/client'`] : []),
      ...free.map((name) => given[name]),
      block,
      'export {}',
    ].join('\n')
  })
}

/** The module settings an app's TypeScript resolves the package under: Node's own, and a bundler's. */
const RESOLUTIONS = [
  { module: 'NodeNext', moduleResolution: 'NodeNext' },
  { module: 'Node16', moduleResolution: 'Node16' },
  { module: 'ESNext', moduleResolution: 'Bundler' },
  { module: 'Preserve', moduleResolution: 'Bundler' },
]

/** The command that finds Debian's chromium, or null (noted as a missing tool). */
function chromiumPath(): string | null {
  const found = spawnSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).stdout.trim()
  return needTool(TOOLS.chromium, found !== '', 'the client package in a browser') ? found : null
}

/**
 * The platform's redirects the apps meet: a report of one split leads to the platform's own
 * address (the gateway puts it on its own path), one of another split to another origin,
 * a server of the test's on 127.0.0.2 (loopback, but not the platform's host, so its URL is
 * passed on as it is), which no request may reach: it would carry the team key.
 */
const REDIRECTS = { moved: '/api/v1/report/creatives/get', elsewhere: '/api/v1/report/adPlacementPositions/get' }

describe('the client package, installed from its tarball in an empty directory', () => {
  let work = ''
  let app = ''
  let tarball = ''
  let elsewhere: Server | undefined
  let elsewhereUrl = ''
  const reachedElsewhere: string[] = []

  beforeAll(async () => {
    elsewhere = createServer((req, res) => {
      reachedElsewhere.push(`${req.method} ${req.url} ${req.headers['x-api-key'] === undefined ? 'without' : 'with'} a key`)
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data": []}')
    })
    await new Promise<void>((resolve) => elsewhere!.listen(0, '127.0.0.2', resolve))
    elsewhereUrl = `http://127.0.0.2:${(elsewhere.address() as AddressInfo).port}`
    const platform = new URL(env.sandbox.url)
    env.sandbox.setRouteFailure(REDIRECTS.moved, { kind: 'redirect', location: `http://${platform.host}${REDIRECTS.moved}?page=2` })
    env.sandbox.setRouteFailure(REDIRECTS.elsewhere, { kind: 'redirect', status: 307, location: `${elsewhereUrl}/collect` })
  })

  afterAll(async () => {
    if (elsewhere) await new Promise((resolve) => elsewhere!.close(resolve).closeAllConnections())
  })

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'rgw-client-package-'))
    // The package's dist/ is built by the suite's build (npm test's pretest), which runs its
    // prepack's script: packing without scripts leaves it alone while other test files import it.
    if (!existsSync(join(CLIENT, 'dist/index.js'))) npm(['run', 'build'], CLIENT)
    const packed = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', work], CLIENT)) as { filename: string; files: { path: string }[] }[]
    tarball = join(work, packed[0]!.filename)
    app = join(work, 'app')
    mkdirSync(app)
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'an-app', private: true, type: 'module' }))
    npm(['install', tarball], app)
    writeFileSync(join(app, 'app.mjs'), APP)
    writeFileSync(join(app, 'app.cjs'), CJS_APP)
  }, 240_000)

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('is a public package of built JavaScript and declarations, versioned with the gateway, with only its declared dependencies', () => {
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    const installed = JSON.parse(readFileSync(join(app, 'node_modules/@report-gateway/client/package.json'), 'utf8')) as {
      version: string
      private?: boolean
      exports: Record<string, Record<string, string>>
      dependencies: Record<string, string>
      peerDependencies: Record<string, string>
    }
    expect(installed.version).toBe(root.version)
    expect(installed.private).toBeUndefined()
    expect(installed.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' })
    // What `npm pack` and `npm publish` run first: the build of what the tarball holds.
    expect((JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.prepack).toBe('npm run build')
    const files = readdirSync(join(app, 'node_modules/@report-gateway/client'), { recursive: true }).map(String).sort()
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([])
    // What the tarball holds, and nothing else: each module of src/ as JavaScript and its
    // declarations, the generated types, the README (no build record of the packing machine).
    const modules = readdirSync(join(CLIENT, 'src')).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')).map((f) => f.slice(0, -'.ts'.length))
    const shipped = ['README.md', 'package.json', 'dist/schema.d.ts', ...modules.flatMap((m) => [`dist/${m}.js`, `dist/${m}.d.ts`])]
    expect(files.filter((f) => statSync(join(app, 'node_modules/@report-gateway/client', f)).isFile())).toEqual(shipped.sort())
    // The app's tree: the client and what its declared dependencies bring, nothing of the
    // workspace; its optional peer (typescript) listed without a version: not installed.
    const tree = JSON.parse(npm(['ls', '--all', '--json'], app)) as { dependencies: Record<string, { version: string; resolved?: string; dependencies?: Record<string, { version?: string }> }> }
    expect(Object.keys(tree.dependencies)).toEqual(['@report-gateway/client'])
    const brought = Object.entries(tree.dependencies['@report-gateway/client']!.dependencies ?? {})
    expect(brought.filter(([, dependency]) => dependency.version !== undefined).map(([name]) => name)).toEqual(Object.keys(installed.dependencies))
    expect(brought.filter(([, dependency]) => dependency.version === undefined).map(([name]) => name)).toEqual(Object.keys(installed.peerDependencies))
    expect(existsSync(join(app, 'node_modules/typescript'))).toBe(false)
    expect(existsSync(join(app, 'node_modules/.package-lock.json'))).toBe(true)
    expect(readFileSync(join(app, 'node_modules/.package-lock.json'), 'utf8')).not.toContain(ROOT)
  })

  it('type-checks an app against the declarations it ships (NodeNext, no Node types: browsers too), a CommonJS module of it too', () => {
    writeFileSync(join(app, 'app.ts'), TYPED_APP)
    writeFileSync(join(app, 'cjs-app.cts'), TYPED_CJS_APP)
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true }, include: ['app.ts', 'cjs-app.cts'] }),
    )
    // A whole tsc run: its own timeout, as it passes vitest's 20 s default beside busy cores.
    const run = spawnSync(TSC, ['-p', 'tsconfig.json'], { cwd: app, encoding: 'utf8' })
    expect(run.stdout + run.stderr).toBe('')
    expect(run.status).toBe(0)
  }, 120_000)

  it('type-checks every TypeScript example of its README as written, under NodeNext, Node16 and Bundler resolution, with the oldest TypeScript it declares and the workspace\'s', () => {
    const examples = readmeExamples()
    expect(examples.length).toBeGreaterThanOrEqual(8)
    examples.forEach((example, i) => writeFileSync(join(app, `readme-${i}.mts`), example))
    const files = examples.map((_, i) => `readme-${i}.mts`)
    const typeCheck = (tsc: string): void => {
      for (const settings of RESOLUTIONS) {
        writeFileSync(join(app, 'tsconfig.readme.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', ...settings, lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true }, files }))
        const run = spawnSync(tsc, ['-p', 'tsconfig.readme.json'], { cwd: app, encoding: 'utf8' })
        expect({ tsc, settings, out: run.stdout + run.stderr }).toEqual({ tsc, settings, out: '' })
      }
    }
    typeCheck(TSC)
    // The TypeScript the package declares it needs (an optional peer: a JavaScript app installs
    // none), its oldest version installed beside the app: an older one refuses openapi-fetch's declarations.
    const peer = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as { peerDependencies?: Record<string, string>; peerDependenciesMeta?: Record<string, { optional?: boolean }> }
    expect(peer.peerDependencies?.typescript).toMatch(/^>=5\.\d+$/)
    expect(peer.peerDependenciesMeta?.typescript?.optional).toBe(true)
    const oldest = join(work, 'oldest-typescript')
    mkdirSync(oldest, { recursive: true })
    writeFileSync(join(oldest, 'package.json'), '{"private": true}\n')
    npm(['install', `typescript@~${peer.peerDependencies!.typescript!.slice('>='.length)}.0`], oldest)
    typeCheck(join(oldest, 'node_modules/.bin/tsc'))
  }, 240_000)

  const runtimes: [string, () => string | null][] = [
    ['20', node20],
    ['22', node22],
    ['24', () => (process.version.startsWith('v24.') ? process.execPath : null)],
  ]
  it('runs in a browser as it is installed: a page of the gateway\'s origin reads a report, its 304, a platform call, a refusal and a redirect', async (ctx) => {
    const chromium = chromiumPath()
    if (chromium === null) return ctx.skip()
    const gatewayUrl = new URL(env.url)
    // The app's origin: the page and its node_modules, and /api/v1/ routed to the gateway.
    const origin: Server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0] as string
      if (path.startsWith('/api/v1/')) {
        const upstream = request({ host: gatewayUrl.hostname, port: gatewayUrl.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        })
        req.pipe(upstream)
        return
      }
      if (path === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE)
      const file = join(app, path)
      if (path.startsWith('/node_modules/') && !path.includes('..') && existsSync(file)) return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(file))
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
    const { launch } = await import('puppeteer-core')
    const browser = await launch({ executablePath: chromium, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] })
    try {
      const page = await browser.newPage()
      const failures: string[] = []
      page.on('pageerror', (err) => failures.push(String(err)))
      await page.goto(`http://127.0.0.1:${(origin.address() as AddressInfo).port}/?key=${KEYS.all}`)
      await page.waitForFunction('window.results !== undefined', { timeout: 30_000 })
      const results = await page.evaluate('window.results')
      expect(failures).toEqual([])
      // A browser shows a script neither a redirect's status nor its location (fetch's opaqueredirect).
      expect(results).toEqual({
        rows: 3, caches: [expect.stringMatching(/^(MISS|HIT)$/), 'HIT', true], campaigns: expect.any(Number), refused: { gatewayError: true, code: 'GW_UNAUTHORIZED', status: 401 },
        moved: { code: 'CLIENT_REDIRECT', status: null, location: null },
      })
    } finally {
      await browser.close()
      await new Promise((resolve) => origin.close(resolve).closeAllConnections())
    }
  }, 120_000)

  for (const [major, find] of runtimes) {
    it(`calls a gateway on Node ${major}: a report and its 304, a platform call by its path, a refusal, no listener and redirects as GatewayError, none followed; and from a CommonJS app`, async (ctx) => {
      const node = find()
      if (!needTool({ name: `Node ${major}`, install: major === '22' ? 'the npm registry (npm install node@22)' : `Node ${major} on PATH` }, node !== null, 'the client package on its Node')) return ctx.skip()
      // Not spawnSync: the gateway answering the app runs in this process.
      const run = await promisify(execFile)(node as string, ['app.mjs', env.url, KEYS.all], { cwd: app, encoding: 'utf8', timeout: 60_000 })
      expect(run.stderr).toBe('')
      const out = JSON.parse(run.stdout) as Record<string, unknown>
      expect(out.node).toMatch(new RegExp(`^v${major}\\.`))
      expect(out.rows).toEqual(['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05', '2026-03-06', '2026-03-07', '2026-03-08'])
      // The first read of a run may find the report cached by an earlier runtime's: MISS or HIT, then the 304 of the kept ETag.
      expect(out.caches).toEqual([expect.stringMatching(/^(MISS|HIT)$/), 'HIT', true])
      expect(out.cacheStatus).toMatch(/^report-gateway; hit; ttl=\d+$/)
      expect((out.campaigns as number[]).length).toBeGreaterThan(0)
      expect(new Set(out.campaigns as number[])).toEqual(new Set([101]))
      expect(out.refused).toEqual({ gatewayError: true, code: 'GW_UNAUTHORIZED', status: 401 })
      expect(out.own304).toEqual([304, true, null])
      expect(out.trace).toEqual({ gatewayError: true, code: 'CLIENT_REFUSED', status: null })
      expect(out.network).toEqual({ gatewayError: true, code: 'CLIENT_NETWORK', status: null })
      expect(out.moved).toEqual({ code: 'CLIENT_REDIRECT', status: 302, location: `${env.url}${REDIRECTS.moved}?page=2` })
      expect(out.elsewhere).toEqual({ code: 'CLIENT_REDIRECT', status: 307, location: `${elsewhereUrl}/collect` })
      expect(reachedElsewhere).toEqual([])
      // A CommonJS app requires the package as it is.
      const required = await promisify(execFile)(node as string, ['app.cjs', env.url, KEYS.all], { cwd: app, encoding: 'utf8', timeout: 60_000 })
      expect(required.stderr).toBe('')
      expect(JSON.parse(required.stdout)).toEqual({ node: out.node, rows: 3, refused: { gatewayError: true, code: 'GW_UNAUTHORIZED' } })
    }, 120_000)
  }
})

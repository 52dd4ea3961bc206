import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { UNVERIFIED_KINDS } from '../../src/compose/redis-parts.js'

// The operations guide: docs/operations.md, its index, and one page a task in
// docs/operations/. docs/operations/alerts.md is where each alert's runbook_url points
// (helm/report-gateway/templates/prometheusrule.yaml: <runbookUrl>#alert-<name in lower case>).

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
const index = read('docs/operations.md')
const pages = readdirSync(new URL('../../docs/operations/', import.meta.url))
  .filter((name) => name.endsWith('.md'))
  .map((name) => ({ name, text: read(`docs/operations/${name}`) }))

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string) => heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')
const anchorsOf = (text: string) => new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)))
const shellBlocks = (text: string) => [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)

describe('operations guide', () => {
  it("has a section for every alert of the chart's PrometheusRule, at the anchor its runbook_url names", () => {
    const anchors = anchorsOf(read('docs/operations/alerts.md'))
    const rules = read('helm/report-gateway/templates/prometheusrule.yaml')
    const alerts = [...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1]!)
    expect(alerts.length).toBeGreaterThanOrEqual(8)
    for (const alert of alerts) {
      expect(rules).toContain(`#alert-${alert.toLowerCase()}`)
      expect(anchors, alert).toContain(`alert-${alert.toLowerCase()}`)
    }
  })

  it("builds the image with every build argument the runtime stage labels it with, so its build info names the commit (not `unknown`)", () => {
    const dockerfile = read('Dockerfile')
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))
    const args = [...runtime.matchAll(/^ARG (\w+)=/gm)].map((m) => m[1]!)
    expect(args).toContain('REVISION')
    const builds = shellBlocks(read('docs/operations/deploy.md')).flatMap((block) => block.replace(/\\\n\s*/g, ' ').split('\n')).filter((line) => /\bdocker build\b/.test(line))
    expect(builds.length).toBeGreaterThan(0)
    for (const line of builds) for (const arg of args) expect(line, arg).toMatch(new RegExp(`--build-arg ${arg}=\\S`))
  })

  it('explains GatewayRedisUnverified for every kind of value its `what` label names', () => {
    const section = read('docs/operations/alerts.md').split('## Alert: GatewayRedisUnverified')[1]!.split('\n## ')[0]!
    for (const what of UNVERIFIED_KINDS) expect(section, what).toContain(`(\`${what}\`)`)
  })

  it('promises no teams change by `helm upgrade` sooner than the kubelet swaps the mounted file (POST /admin/reload reads that file)', () => {
    for (const page of ['docs/operations/teams-and-keys.md', 'docs/operations/runbook.md']) {
      const paragraphs = read(page).split(/\n\s*\n|\n(?=\s*(?:\d+\.|-) )/).map((x) => x.replace(/\s+/g, ' '))
      for (const paragraph of paragraphs.filter((x) => /helm upgrade/.test(x) && /at once/.test(x))) expect(paragraph, page).toMatch(/kubelet/)
    }
  })

  it('sizes the memory limit on every budget values.yaml names for it', () => {
    const values = read('helm/report-gateway/values.yaml')
    const budgets = [...values.split(/\nresources:/)[0]!.split('\n\n').pop()!.matchAll(/config ([a-z]+\.[A-Za-z0-9]+)/g)].map((m) => m[1]!)
    expect(budgets).toEqual(['cache.l1MaxBytes', 'platform.bufferTotalBytes', 'jobs.resultsRoom', 'server.maxConnections'])
    const scaling = read('docs/operations/replicas.md').split('\n\n').find((p) => p.includes('resources.limits.memory'))!
    for (const budget of budgets) expect(scaling, budget).toContain(budget)
  })

  it('never substitutes a variable that may be empty into a sed expression: each is checked with ${VAR:?} first', () => {
    const blocks = [read('README.md'), ...pages.map((p) => p.text)].flatMap(shellBlocks)
    const seds = blocks.flatMap((block) => [...block.matchAll(/sed -i "([^"]*)"/g)].map((m) => ({ block, vars: [...m[1]!.matchAll(/\$(\w+)/g)].map((v) => v[1]!) })))
    // The guides edit key entries with `npm run keys -- rotate` and `remove` now: there may be no sed at all.
    for (const { block, vars } of seds) {
      expect(vars.length).toBeGreaterThan(0)
      for (const v of vars) expect(block, v).toContain(`\${${v}:?`)
    }
  })

  it('keeps the files that hold keys in clear out of git', () => {
    const ignored = read('.gitignore').split('\n')
    const written = [read('README.md'), ...pages.map((p) => p.text)].flatMap((text) => [...text.matchAll(/\btee ([\w.-]+)/g)].map((m) => m[1]!))
    expect(written.length).toBeGreaterThan(0)
    for (const file of written) expect(ignored.some((p) => p === file || (p.startsWith('*') && file.endsWith(p.slice(1)))), file).toBe(true)
  })

  it('keeps the platform token files the pages read from the checkout out of git (the runbook\'s ./new-token, deploy.md\'s ./platform-token)', () => {
    const ignored = read('.gitignore').split('\n')
    const tokenFiles = [read('README.md'), ...pages.map((p) => p.text)].flatMap((text) => [...text.matchAll(/(?:\$\(cat |--from-file=[\w-]+=)\.\/([\w.-]+)/g)].map((m) => m[1]!))
    expect(tokenFiles).toEqual(expect.arrayContaining(['new-token', 'platform-token']))
    for (const file of tokenFiles) expect(ignored.some((p) => p === `/${file}` || p === file), file).toBe(true)
  })

  it("keeps the client's tarball out of git: the README's `npm pack -w @report-gateway/client` writes it into the checkout, where `git add -A` would take it", () => {
    const ignored = read('.gitignore').split('\n').filter((line) => line && !line.startsWith('#'))
    // A pattern as git reads it at the top level: `*` any run of characters but `/`, a leading `/` anchoring it there.
    const matches = (pattern: string, file: string) => new RegExp(`^${pattern.replace(/^\//, '').replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`).test(file)
    const readme = read('README.md')
    expect(readme).toMatch(/npm pack -w @report-gateway\/client/)
    const tarballs = [...readme.matchAll(/npm install \.\/([\w.-]+\.tgz)/g)].map((m) => m[1]!)
    const { version } = JSON.parse(read('packages/client/package.json')) as { version: string }
    expect(tarballs).toContain(`report-gateway-client-${version}.tgz`)
    for (const file of [...tarballs, 'report-gateway-client-1.2.3.tgz']) expect(ignored.some((p) => matches(p, file)), file).toBe(true)
  })

  it("keeps the secrets folder deploy.md's `docker run` mounts from the checkout, and an .env (which .dockerignore says .gitignore keeps out), out of git", () => {
    const ignored = read('.gitignore').split('\n').filter((line) => line && !line.startsWith('#'))
    // A pattern as git reads it: a leading `/` anchors it at the top, a trailing `/` names a folder
    // (its files with it), `*` any run of characters but `/`, and one with no `/` inside matches at any depth.
    const matches = (pattern: string, file: string) => {
      const folder = pattern.endsWith('/')
      const body = pattern.replace(/^\//, '').replace(/\/$/, '').replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')
      const anywhere = !pattern.slice(0, -1).includes('/')
      return new RegExp(`^${anywhere ? '(?:.*/)?' : ''}${body}${folder ? '/' : '(?:/|$)'}`).test(file)
    }
    const mounted = [...read('docs/operations/deploy.md').matchAll(/-v "\$PWD\/([\w.-]+):\/run\/secrets/g)].map((m) => m[1]!)
    expect(mounted).toEqual(['secrets'])
    expect(read('.dockerignore')).toMatch(/What \.gitignore keeps out of the repository[^\n]*\n#[^\n]*an \.env/)
    for (const file of [...mounted.map((folder) => `${folder}/platform-token`), '.env', '.env.local', 'src/.env']) expect(ignored.some((p) => matches(p, file)), file).toBe(true)
  })

  it('is one page a task, each listed by the index; a page links its own sections by anchor alone, and the README links the index', () => {
    expect(pages.length).toBeGreaterThanOrEqual(8)
    for (const { name, text } of pages) {
      expect(index, name).toContain(`](operations/${name})`)
      expect(text, name).toMatch(/^# .+\n\nPart of the \[operations guide\]\(\.\.\/operations\.md\)/)
      const anchors = anchorsOf(text)
      for (const [, target] of text.matchAll(/\]\(#([^)]+)\)/g)) expect(anchors, `${name}#${target}`).toContain(target)
    }
    expect(read('README.md')).toContain('](docs/operations.md)')
  })

  it('says, for each change an upgrade brings to what a running installation keeps or logs, what the operator does', () => {
    const sections = read('docs/operations/upgrade.md').split('\n## ').slice(1)
    const section = (heading: RegExp) => sections.find((s) => heading.test(s.split('\n')[0]!)) ?? ''
    // The teams' job results bounded by Redis' room: who may now be refused, and the setting that changes it.
    expect(section(/job results/i)).toMatch(/jobs\.resultsRoom[\s\S]*maxmemory[\s\S]*413 GW_JOB_RESULT_TOO_LARGE/)
    // Random request ids: what a log query that read the replica or an order from an id does instead.
    expect(section(/request ids/i)).toMatch(/x-request-id[\s\S]*reqId/)
    // The advertiser's index: nothing to do, and the old sets' end.
    expect(section(/report copies/i)).toMatch(/adv-entries[\s\S]*[Nn]othing to do/)
  })
})

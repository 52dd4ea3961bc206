import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import semver from 'semver'
import { describe, expect, it } from 'vitest'

// Runtime drift: the suite runs on the Node the image ships (24 LTS), taken
// from the `node` devDependency that npm scripts put first on PATH; `engines` says so,
// and no locked package refuses that Node (which `npm ci` would warn as EBADENGINE).

const ROOT = new URL('../../', import.meta.url)
const read = <T>(path: string) => JSON.parse(readFileSync(fileURLToPath(new URL(path, ROOT)), 'utf8')) as T
const pkg = read<{ engines: { node: string }; devDependencies: Record<string, string> }>('package.json')
const lock = read<{ packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean }> }>('package-lock.json')

describe('the Node the suite runs on', () => {
  it('is Node 24, from the node devDependency', () => {
    expect(semver.major(process.version)).toBe(24)
    expect(semver.minVersion(pkg.devDependencies.node as string)?.major).toBe(24)
  })

  it('is what package.json engines admits', () => {
    expect(semver.satisfies(process.version, pkg.engines.node)).toBe(true)
  })

  it('is admitted by every locked package (npm ci prints no EBADENGINE)', () => {
    const refusing = Object.entries(lock.packages)
      .filter(([path]) => path !== '')
      .map(([path, entry]) => [path, Array.isArray(entry.engines) ? undefined : entry.engines?.node] as const)
      .filter(([, range]) => range !== undefined && !semver.satisfies(process.version, range, { includePrerelease: true }))
    expect(refusing).toEqual([])
  })
})

import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { buildInfo, nodeRefusal } from '../../src/observe/build-info.js'

const { version, engines } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; engines: { node: string } }

describe('buildInfo', () => {
  it('reads the version from package.json and the Node that runs it', () => {
    expect(buildInfo({})).toEqual({ version, commit: 'unknown', node: process.version })
  })

  it.each([
    ['a whole commit id', '3bf2f54a1c9e0d7b6a5f4e3d2c1b0a9f8e7d6c5b', '3bf2f54a1c9e0d7b6a5f4e3d2c1b0a9f8e7d6c5b'],
    ['an abbreviated one, upper case and padded', ' 3BF2F54 ', '3bf2f54'],
    ['the image default', 'unknown', 'unknown'],
    ['anything else (a label value must not carry it)', 'main"} 1\nx{', 'unknown'],
    ['too short', 'abc', 'unknown'],
  ])('takes GATEWAY_COMMIT only when it is a commit id: %s', (_name, given, commit) => {
    expect(buildInfo({ GATEWAY_COMMIT: given }).commit).toBe(commit)
  })
})

describe('nodeRefusal', () => {
  it('takes the Node that runs the tests, the floor of package.json\'s engines', () => {
    expect(nodeRefusal()).toBeNull()
    expect(nodeRefusal(engines.node.replace(/^[\^>=~ ]+/, ''))).toBeNull()
  })

  it.each([
    ['the floor', '24.12.0', null],
    ['a later patch and minor', '24.21.3', null],
    ['a later major (engines\' caret is no ceiling to refuse a start on)', '26.1.0', null],
    ['an earlier minor of the major', '24.11.1', 'Node 24.11.1 cannot run the gateway: it needs Node 24.12.0 or later (package.json engines: ^24.12.0)'],
    ['an earlier major, whose ArrayBuffer has no transfer()', '20.20.2', 'Node 20.20.2 cannot run the gateway: it needs Node 24.12.0 or later (package.json engines: ^24.12.0)'],
  ])('refuses a Node older than the engines allow: %s', (_name, node, refusal) => {
    expect(nodeRefusal(node, '^24.12.0')).toBe(refusal)
  })

  it('refuses nothing when engines say no floor it can read', () => {
    expect(nodeRefusal('20.0.0', '*')).toBeNull()
  })
})

import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { ConfigError, startConfig } from '../../src/config.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { loadConfigFrom } from '../helpers/load-config.js'

// README, "Configuration": invalid configuration stops the start with one line per problem,
// naming the key. A setting written in CONFIG_FILE or TEAMS_FILE is also named by its line
// there (the start's message, ConfigError.located): a teams file of many teams is fixed at
// a line, not at a dotted path to count out.

const PLATFORM = { PLATFORM_BASE_URL: 'https://platform.example.com', PLATFORM_TOKEN: 'platform-token-abcdef123456' }
const HASH = hashApiKey('rgw_config_lines_key')

function problemsOf(env: Record<string, string>, files: Record<string, string>): string[] {
  try {
    loadConfigFrom(env, files)
  } catch (err) {
    if (err instanceof ConfigError) return err.located
    throw err
  }
  throw new Error('the configuration loaded')
}

const teams = (third: string) => `teams:
  growth:
    keys: ["${HASH}"]
    advertisers: [101, 102]
  ads.eu:
    keys: ["${hashApiKey('rgw_config_lines_key_2')}"]
${third}`

describe('a problem of a setting written in a file names its line', () => {
  it.each([
    ['a list written as text', '    advertisers: 101, 102\n', /^teams\.ads\.eu\.advertisers: .+; line 7 of TEAMS_FILE \(\/virtual\/teams\.yaml\)$/],
    ['a misspelled field', '    advertisers: [103]\n    wirte: true\n', /^teams\.ads\.eu\.wirte: unknown setting; did you mean teams\.ads\.eu\.write\?; line 8 of TEAMS_FILE \(\/virtual\/teams\.yaml\)$/],
    ['an item of a list', '    advertisers: [103, "all"]\n', /^teams\.ads\.eu\.advertisers\.1: .+; line 7 of TEAMS_FILE \(\/virtual\/teams\.yaml\)$/],
  ])('TEAMS_FILE, %s', (_name, third, expected) => {
    expect(problemsOf({ ...PLATFORM, TEAMS_FILE: '/virtual/teams.yaml' }, { '/virtual/teams.yaml': teams(third) })).toEqual([expect.stringMatching(expected)])
  })

  it('TEAMS_FILE, a team without its keys: the line of the team', () => {
    const yaml = `${teams('    advertisers: [103]\n')}  search:\n    advertisers: [104]\n`
    expect(problemsOf({ ...PLATFORM, TEAMS_FILE: '/virtual/teams.yaml' }, { '/virtual/teams.yaml': yaml })).toEqual([expect.stringMatching(/^teams\.search\.keys: required.*; line 8 of TEAMS_FILE \(\/virtual\/teams\.yaml\)$/)])
  })

  it("a name the config may not take: the line of that name, not of the mapping holding it", () => {
    const yaml = `${teams('    advertisers: [103]\n')}  "..":\n    keys: ["${hashApiKey('rgw_config_lines_key_3')}"]\n    advertisers: [104]\n`
    expect(problemsOf({ ...PLATFORM, TEAMS_FILE: '/virtual/teams.yaml' }, { '/virtual/teams.yaml': yaml })).toEqual([expect.stringMatching(/^teams: "\.\." is not a valid team name .+; line 8 of TEAMS_FILE \(\/virtual\/teams\.yaml\)$/)])
    const config = `cache:\n  l1MaxBytes: 8MiB\ncredentials:\n\n  Partner:\n    baseUrl: https://partner.example.com\n`
    expect(problemsOf({ ...PLATFORM, CONFIG_FILE: '/virtual/config.yaml' }, { '/virtual/config.yaml': config })).toEqual([expect.stringMatching(/^credentials: "Partner" is not a valid credential name .+; line 5 of CONFIG_FILE \(\/virtual\/config\.yaml\)$/)])
  })

  it('CONFIG_FILE: a setting and its teams, as the README\'s quick start writes them', () => {
    const yaml = `cache:\n  l1MaxBytes: lots\n${teams('    advertisers: 101, 102\n')}`
    expect(problemsOf({ ...PLATFORM, CONFIG_FILE: '/virtual/config.yaml' }, { '/virtual/config.yaml': yaml })).toEqual([
      expect.stringMatching(/^cache\.l1MaxBytes: .+; line 2 of CONFIG_FILE \(\/virtual\/config\.yaml\)$/),
      expect.stringMatching(/^teams\.ads\.eu\.advertisers: .+; line 9 of CONFIG_FILE \(\/virtual\/config\.yaml\)$/),
    ])
  })

  it('a setting given by a variable, or written in no file, is named without a line', () => {
    const problems = problemsOf({ ...PLATFORM, PORT: 'eighty', CONFIG_FILE: '/virtual/config.yaml' }, { '/virtual/config.yaml': teams('    advertisers: [103]\n') })
    expect(problems).toEqual([expect.stringMatching(/^PORT: [^;]+$/)])
  })
})

describe('several problems of one file', () => {
  // Read top to bottom as the file is: Ajv lists a nested setting's problem after the top level's.
  it('are listed in the order of their lines, a problem of no line first', () => {
    const file = 'cache:\n  maxRangeDay: 30\nplatfrom:\n  timeout: 5s\nlimits:\n  secretSuspension: 2y\n'
    const located = problemsOf({ ...PLATFORM, CONFIG_FILE: '/virtual/config.yaml' }, { '/virtual/config.yaml': file })
    expect(located.map((p) => /; line (\d+) of/.exec(p)?.[1])).toEqual(['2', '3', '6'])
    const both = problemsOf({ ...PLATFORM, LOG_LEVEL: 'verbose', CONFIG_FILE: '/virtual/config.yaml' }, { '/virtual/config.yaml': 'cache:\n  ttl: fast\nlimits:\n  secretSuspension: 2y\n' })
    expect(both.map((p) => /; line (\d+) of/.exec(p)?.[1] ?? p.split(':')[0])).toEqual(['LOG_LEVEL', '2', '4'])
  })
})

describe("a start's refusal", () => {
  // A mistyped variable (PLATFORM_TOKN) is named beside the settings' problems: a problem of
  // no line, listed first with the variables', before the file's lines.
  it('lists a mistyped variable before the lines of the file', async () => {
    const file = 'cache:\n  ttl: fast\n'
    const refused = await startConfig({ env: { ...PLATFORM, PLATFORM_TOKN: 'x', CONFIG_FILE: '/virtual/config.yaml' }, readFile: (p) => (p === '/virtual/config.yaml' ? file : readFileSync(p, 'utf8')) })
    if (!(refused instanceof ConfigError)) throw new Error('the configuration loaded')
    expect(refused.located.map((p) => /; line (\d+) of/.exec(p)?.[1] ?? p.split(':')[0])).toEqual(['PLATFORM_TOKN', '2'])
    expect(refused.problems.map((p) => p.split(':')[0])).toEqual(['PLATFORM_TOKN', 'cache.ttl'])
  })
})

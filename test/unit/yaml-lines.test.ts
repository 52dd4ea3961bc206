import { describe, expect, it } from 'vitest'
import { locatedText, placesOf } from '../../src/config/yaml-lines.js'

// Where a refused configuration's problem points (GW_CONFIG_INVALID's `errors`): a file
// that could not be parsed or read is named with its variable and path, and a YAML error
// with its line (found by a black-box pass, session 133: all three were null, the message
// alone saying them).

describe('placesOf', () => {
  it('names the file and the line of a YAML error, and the file of one that cannot be read or is no mapping', () => {
    const problems = [
      'TEAMS_FILE (/etc/gw/teams.yaml): not valid YAML at line 4, column 5: Flow sequence in block collection must be sufficiently indented and end with a ]',
      'CONFIG_FILE (/etc/gw/config.yaml): cannot be read (ENOENT)',
      'TEAMS_FILE (/etc/gw/teams (copy).yaml): must be a YAML mapping',
    ]
    expect(placesOf(problems)).toEqual([
      { message: problems[0], path: null, variable: 'TEAMS_FILE', file: '/etc/gw/teams.yaml', line: 4 },
      { message: problems[1], path: null, variable: 'CONFIG_FILE', file: '/etc/gw/config.yaml', line: null },
      { message: problems[2], path: null, variable: 'TEAMS_FILE', file: '/etc/gw/teams (copy).yaml', line: null },
    ])
    // The message says its place already: not said twice.
    expect(locatedText(placesOf(problems)[0]!)).toBe(problems[0])
  })

  it('leaves a problem of no file without one', () => {
    expect(placesOf(['PLATFORM_TOKEN: must not be empty'])).toEqual([{ message: 'PLATFORM_TOKEN: must not be empty', path: null, variable: null, file: null, line: null }])
  })
})

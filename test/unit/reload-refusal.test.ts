import { describe, expect, it } from 'vitest'
import { refusedProblems } from '../../src/access/team-reload.js'
import { refusalView } from '../../src/http/admin/admin-status.js'

describe('refusedProblems', () => {
  it('puts the problems that name no file under the files the teams come from, once', () => {
    expect(refusedProblems('TEAMS_FILE', ['teams.a.write: must be a boolean', 'teams.b: unknown'])).toBe('TEAMS_FILE: teams.a.write: must be a boolean; teams.b: unknown')
  })

  it('leaves a problem that names its own file as it is', () => {
    expect(refusedProblems('TEAMS_FILE', ['TEAMS_FILE (/t.yaml): not valid YAML at line 4, column 1: x'])).toBe('TEAMS_FILE (/t.yaml): not valid YAML at line 4, column 1: x')
    expect(refusedProblems('CONFIG_FILE and TEAMS_FILE', ['ADMIN_TOKENS_FILE: line 3 is not name:sha256:…'])).toBe('ADMIN_TOKENS_FILE: line 3 is not name:sha256:…')
  })

  it('says both kinds, the unnamed first', () => {
    expect(refusedProblems('TEAMS_FILE', ['ADMIN_TOKENS_FILE: line 3 is bad', 'teams.a.write: must be a boolean'])).toBe('TEAMS_FILE: teams.a.write: must be a boolean; ADMIN_TOKENS_FILE: line 3 is bad')
  })
})

describe('refusalView', () => {
  it('says since when as an ISO instant and each problem scrubbed; null while no reload is refused', () => {
    const scrub = (text: string) => text.replace('whsec_abc', '[REDACTED]')
    expect(refusalView({ since: Date.UTC(2026, 11, 7, 16, 0), problems: ['teams.a.webhook.secret: must be whsec_… (got whsec_abc)'] }, scrub)).toEqual({
      since: '2026-12-07T16:00:00.000Z',
      problems: ['teams.a.webhook.secret: must be whsec_… (got [REDACTED])'],
    })
    expect(refusalView(null, scrub)).toBeNull()
  })
})

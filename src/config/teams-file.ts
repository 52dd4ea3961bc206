import { readFileSync } from 'node:fs'
import { Type } from '@sinclair/typebox'
import { Ajv } from 'ajv'
import { TeamSchema, type RawTeam } from './schema.js'
import { isPlainObject, readYamlObject } from './sources.js'
import { normalizeTeams, type TeamConfig } from './teams.js'

const validate = new Ajv({ allErrors: true, useDefaults: true, strict: false }).compile(Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.-]+$' }), TeamSchema))

/**
 * The teams of a config file alone, for `npm run keys -- list`: no environment, no
 * credentials (a team's credential is not checked). Problems are one line each.
 */
export function teamsOfFile(path: string, readFile: (p: string) => string = (p) => readFileSync(p, 'utf8')): { teams: TeamConfig[]; problems: string[] } {
  const problems: string[] = []
  const file = readYamlObject(path, readFile, problems, path)
  const raw = file.teams ?? {}
  if (!isPlainObject(raw)) return { teams: [], problems: [...problems, 'teams: must be a mapping of team names'] }
  if (!validate(raw)) {
    // Paths only: a key list may hold a pasted plaintext key, never repeated here.
    for (const e of validate.errors ?? []) problems.push(`teams${e.instancePath.replace(/\//g, '.')}: ${e.message ?? 'is invalid'}`)
    return { teams: [], problems: [...new Set(problems)] }
  }
  const teams = normalizeTeams(raw as Record<string, RawTeam>, null, problems)
  return { teams, problems }
}

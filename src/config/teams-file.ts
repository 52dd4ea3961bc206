import { readFileSync } from 'node:fs'
import { parseDocument } from 'yaml'
import type { RawTeam } from './schema.js'
import { isPlainObject, readYamlObject } from './sources.js'
import { schemaProblems } from './schema-errors.js'
import { normalizeTeams, type TeamConfig } from './teams.js'
import { validateTeams } from './validators.generated.js'
import { webhookSecretSpellings } from './webhook-secret.js'

/**
 * The `teams:` mapping of TEAMS_FILE, a file that holds the teams and nothing else, so
 * that it can live in a Secret of its own and change without touching the settings
 * (nor restarting the pods that hold them). Validated with the rest of the config;
 * undefined when the file cannot be used, and `problems` say why, naming the file.
 */
export function readTeamsFile(path: string, readFile: (p: string) => string, problems: string[]): unknown {
  const label = `TEAMS_FILE (${path})`
  const before = problems.length
  const file = readYamlObject(path, readFile, problems, label)
  if (problems.length > before) return undefined
  let strayTeams = 0
  for (const key of Object.keys(file).filter((k) => k !== 'teams')) {
    if (looksLikeTeam(file[key])) {
      strayTeams += 1
      problems.push(`${label}: ${key}: a team (keys, advertisers) outside teams:; write a teams: line first and indent ${key}: under it`)
    } else problems.push(`${label}: ${key}: not a teams setting; only teams: belongs in TEAMS_FILE (set ${key} in CONFIG_FILE)`)
  }
  // An empty file is refused, not read as no team: a file caught half-written (an editor
  // that truncates before it writes) must not revoke every key until the next poll.
  if (file.teams == null && strayTeams === 0) problems.push(`${label}: holds no teams: mapping; write teams: {} for no team`)
  return problems.length > before ? undefined : file.teams
}

/**
 * The teams' secrets a TEAMS_FILE's or a CONFIG_FILE's `text` holds, which a start refusal
 * does not repeat (observe/start-secrets.ts): each key's hash (or what stands in its place)
 * and each webhook's secret, in each spelling the log scrubs, of every team under `teams:`
 * or written outside it. A file that is no valid YAML gives those of what reads as YAML (a
 * file cut off: what stands before the fault); none when not even that is read.
 */
export function teamFileSecrets(text: string): string[] {
  let file: unknown
  try {
    file = parseDocument(text).toJS()
  } catch {
    return []
  }
  if (!isPlainObject(file)) return []
  // Each mapping under `teams:` and at the top (a team written outside it): a section of settings there holds neither.
  const teams = [...(isPlainObject(file.teams) ? Object.values(file.teams) : []), ...Object.values(file)].filter(isPlainObject)
  return teams.flatMap((team) => [...keyTexts(team.keys), ...(isPlainObject(team.webhook) && typeof team.webhook.secret === 'string' ? webhookSecretSpellings(team.webhook.secret) : [])])
}

/** The texts of a team's `keys`: each hash, as a string or as an entry's `hash`. */
function keyTexts(keys: unknown): string[] {
  if (!Array.isArray(keys)) return []
  return keys.map((key: unknown) => (isPlainObject(key) ? key.hash : key)).filter((key): key is string => typeof key === 'string')
}

/** A mapping that holds a team's own fields: a team written where a setting was expected. */
function looksLikeTeam(value: unknown): boolean {
  return isPlainObject(value) && ('keys' in value || 'advertisers' in value)
}

/**
 * The teams of a config file (or, with `teamsFile`, of a TEAMS_FILE, read by the
 * gateway's rules for one) alone, for `npm run keys -- list`: no environment, no
 * credentials (a team's credential is not checked). Problems are one line each.
 */
export function teamsOfFile(path: string, { teamsFile = false } = {}, readFile: (p: string) => string = (p) => readFileSync(p, 'utf8')): { teams: TeamConfig[]; problems: string[] } {
  const problems: string[] = []
  const raw = (teamsFile ? readTeamsFile(path, readFile, problems) : readYamlObject(path, readFile, problems, path).teams) ?? {}
  if (!isPlainObject(raw)) return { teams: [], problems: [...problems, 'teams: must be a mapping of team names'] }
  if (!validateTeams(raw)) {
    // In the gateway's words, which never repeat a key list's value (it may hold a pasted plaintext key).
    return { teams: [], problems: [...problems, ...schemaProblems(validateTeams.errors ?? [], { teams: raw }, new Map(), ['teams'])] }
  }
  const teams = normalizeTeams(raw as Record<string, RawTeam>, null, problems)
  return { teams, problems }
}

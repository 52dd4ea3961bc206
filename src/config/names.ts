// The shapes of names and dates the config holds, as patterns of its schema and as the
// checks and messages of the modules that read them. Plain strings: the gateway reads them
// without loading the schema's library (TypeBox), whose code only the validators'
// generator runs (scripts/config-validators.mjs).

// A team's name and a key's id are labels of metrics, fields of log lines and words of
// the console's pages: plain characters only, checked by the config and by `npm run keys`.
// A team's name is also the last segment of DELETE /admin/suspensions/{team}: not `.` nor
// `..`, which every client (WHATWG URLs, curl, `%2E%2E` too) takes out of a path, and 64
// characters at most, within the 100 the admin router takes of a path parameter. Written
// without a look-ahead: the chart's values.schema.json and the admin OpenAPI document carry
// it to readers with Go's regexp (RE2: helm, Go validators), which has none.
export const TEAM_NAME_PATTERN = '^([A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}|\\.([A-Za-z0-9_-][A-Za-z0-9_.-]{0,62}|\\.[A-Za-z0-9_.-]{1,62}))$'
export const TEAM_NAME_RULE = 'letters, digits, _ . - only, 64 at most, not . or ..'
// A credential's name is also the <NAME> of its variables (CREDENTIAL_<NAME>_TOKEN, in upper
// case, `-` as `_`), and a segment of /admin/credentials/{name}/token: 64 characters at most,
// as that call takes. The schema checks only the credentials whose names match (a record's
// key pattern); normalize.ts refuses the others, as teams.ts does for teams.
export const CREDENTIAL_NAME_PATTERN = '^[a-z][a-z0-9_-]{0,63}$'
export const CREDENTIAL_NAME_RULE = 'lower-case letters, digits, _ - only, starting with a letter, 64 at most'

/** The prefix of a named credential's variables: CREDENTIAL_PARTNER_EU_ for partner-eu. */
export function credentialPrefix(name: string): string {
  return `CREDENTIAL_${name.toUpperCase().replace(/-/g, '_')}_`
}

/** What follows that prefix in each variable a named credential reads (normalize.ts). */
export const CREDENTIAL_VARIABLE_SUFFIXES: readonly string[] = ['TOKEN', 'TOKEN_FILE', ...['USERNAME', 'PASSWORD', 'CLIENT_ID', 'CLIENT_SECRET'].flatMap((s) => [s, `${s}_FILE`])]

export const KEY_ID_PATTERN = '^[A-Za-z0-9_.-]{1,64}$'
export const KEY_ID_RULE = 'letters, digits, _ . - (at most 64)'
export const EXPIRES_AT_PATTERN = '^\\d{4}-\\d{2}-\\d{2}([T ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:?\\d{2})?)?$'

import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { WEBHOOK_HOST_PATTERN } from './webhook-host-pattern.mjs'
import { atLeastPattern } from './floor-pattern.mjs'

// The chart's `config` value is the gateway's CONFIG_FILE: values.schema.json checks it
// against the gateway's own schema (definitions.gatewayConfig), so that a mistyped setting
// or a value of the wrong form fails `helm install` instead of every pod's start (exit 78).
// The definition is generated from src/config/schema.ts (through the committed
// validators.generated.js) and config/default.yaml; test/unit/helm-chart.test.ts fails
// while it differs (run `npm run generate:chart-schema`).

export const VALUES_SCHEMA = new URL('../helm/report-gateway/values.schema.json', import.meta.url)
const DEFAULTS = new URL('../config/default.yaml', import.meta.url)

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * The gateway's config schema as a CONFIG_FILE is checked: merged over config/default.yaml,
 * so a setting the defaults hold may be left out (no `required` where the default is an
 * object), while an object the defaults leave null (a Sentinel's {host, port}) still needs
 * its parts. `renamed` ([old path, new path]) and `retired` ([path]) are taken, with a
 * warning, as the gateway takes them. `teams` is left to the chart's templates.
 */
export function chartConfigSchema(configSchema, defaults, renamed, retired, floors, units) {
  const walk = (node, fallback) => {
    if (Array.isArray(node)) return node.map((n) => walk(n, fallback))
    if (!isObject(node)) return node
    const out = {}
    for (const [key, value] of Object.entries(node)) {
      if (key === 'default') continue
      if (key === 'required' && isObject(fallback)) continue
      if (key === 'properties') out[key] = Object.fromEntries(Object.entries(value).map(([name, p]) => [name, walk(p, isObject(fallback) ? fallback[name] : undefined)]))
      else if (key === 'anyOf') out[key] = walk(value, fallback)
      else out[key] = walk(value, undefined)
    }
    // A record whose names follow a pattern (the credentials: each a segment of an admin
    // call's path) takes no other name, as the gateway refuses one at start; its schema's
    // patternProperties alone would let any other name through unchecked.
    const patterns = isObject(node.patternProperties) ? Object.keys(node.patternProperties) : []
    if (patterns.length === 1 && node.properties === undefined && node.additionalProperties === undefined) out.propertyNames = { pattern: patterns[0] }
    return out
  }
  const schema = walk(configSchema, defaults)
  const at = (path) => path.reduce((node, name) => node?.properties?.[name], schema)
  for (const [from, to] of renamed) at(from.slice(0, -1)).properties[from.at(-1)] = at(to)
  for (const [path] of retired) at(path.slice(0, -1)).properties[path.at(-1)] = {}
  // The gateway's schema takes a webhook host of a host's shape, and its load refuses one a URL
  // writes otherwise (127.1, [0:0:0:0:0:0:0:1]: exit 78); the chart refuses those at install.
  at(['jobs', 'webhookHosts']).items.pattern = WEBHOOK_HOST_PATTERN
  // A duration or size below its floor stops the gateway at start (exit 78): the chart refuses it
  // at install, as a number and as text in every unit.
  for (const floor of floors) {
    const setting = at(floor.path)
    setting.description = `${setting.description}; at least ${floor.written}`
    for (const form of setting.anyOf) {
      if (form.type === 'integer') form.minimum = floor.least
      else form.pattern = atLeastPattern(floor.least, units[floor.kind])
    }
  }
  // Teams are the chart's `teams` value: under `config` rendering fails saying so (whatever they hold).
  schema.properties.teams = {}
  return schema
}

/** values.schema.json with `definition` as definitions.gatewayConfig, on the line of its own it has. */
export function withGatewayConfig(text, definition) {
  const line = /^ {4}"gatewayConfig": .*$/m
  if (!line.test(text)) throw new Error('values.schema.json has no "gatewayConfig" line under definitions')
  return text.replace(line, () => `    "gatewayConfig": ${JSON.stringify(definition)},`)
}

/** The definition from the committed validators, the defaults and the renamed and retired settings. */
export async function currentDefinition() {
  const { configSchema } = await import('../src/config/validators.generated.js')
  const { RENAMED_SETTINGS, RETIRED_SETTINGS } = await import('../src/config/setting-moves.ts')
  const { SETTING_FLOORS } = await import('../src/config/floors.ts')
  const { DURATION_UNITS, SIZE_UNITS } = await import('../src/config/units.ts')
  return chartConfigSchema(configSchema, parse(readFileSync(DEFAULTS, 'utf8')), RENAMED_SETTINGS, RETIRED_SETTINGS, SETTING_FLOORS, { duration: DURATION_UNITS, size: SIZE_UNITS })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(VALUES_SCHEMA, withGatewayConfig(readFileSync(VALUES_SCHEMA, 'utf8'), await currentDefinition()))
  process.stdout.write(`wrote ${fileURLToPath(VALUES_SCHEMA)}\n`)
}

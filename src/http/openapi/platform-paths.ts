// The platform calls the gateway knows, each described under its own path, so that a
// client generated from the document calls it by that path (`/api/v1/campaign/get`, not
// one `{path}` parameter that a generator escapes to `campaign%2Fget`, a 404) and a
// validating proxy (Prism) routes it to its operation. The gateway knows a platform path
// from three places: its report routes (documented from their own route schemas), its
// settings (`ownership.listPath`, the campaign list it reads owners from, and
// `ownership.campaignPaths`, the paths whose `{id}` names a campaign), and the platform's
// calls its sandbox stands in for (../shared/platform-api.md: campaign list, create,
// delete). Forms are typed as strictly as the platform validates them (the sandbox's
// rules, src/sandbox/campaign-routes.ts). Any other path under /api/v1/ is forwarded all
// the same; it has no operation of its own (`components.pathItems.PlatformCall` says what
// such a call is).

type Json = Record<string, unknown>

/** What the document says of one known platform operation beyond what every platform call shares. */
export interface KnownOperation {
  operationId: string
  summary: string
  description: string
  /** Path and query parameters. */
  parameters?: Json[]
  /** The JSON body it takes; none: the call's body is whatever the platform takes. */
  body?: Json
  /** The platform's success: its status and the JSON it answers with. */
  success: { status: string; description: string; schema: Json }
}

/** Settings that name platform paths (config `ownership`). */
export interface PlatformPathSettings {
  listPath: string
  campaignPaths: readonly string[]
  fields: { data: string; id: string; userId: string; lastPage: string }
}

const ID = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const
const DATE = { type: 'string', format: 'date', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' } as const
const FLAG = { type: ['boolean', 'integer', 'string'], enum: [true, false, 1, 0, '1', '0', 'true', 'false'] } as const

/** A campaign as the platform answers it (the sandbox's record; `id` and `userId` are what the gateway reads). */
export const CAMPAIGN_SCHEMA: Json = {
  type: 'object',
  description: 'A campaign as the platform answers it. The gateway reads `id` and `userId` (whose campaign it is) and passes the rest on.',
  required: ['id', 'userId'],
  properties: {
    id: ID,
    userId: { ...ID, description: 'The account the campaign belongs to.' },
    name: { type: 'string' },
    status: { type: 'string', examples: ['active', 'paused'] },
    adDomain: { type: 'string' },
    clickUrl: { type: 'string' },
    autoStart: { type: 'boolean' },
    dates: { type: 'object', properties: { from: DATE, to: DATE } },
    country: { type: 'string' },
    bid: { type: 'number' },
    budget: { type: 'object', properties: { daily: { type: 'number' }, total: { type: 'number' } } },
    creativeSetIds: { type: 'array', items: { type: 'integer' } },
  },
}

const positive = (description: string) => ({ type: 'number', exclusiveMinimum: 0, description })

/** `banner/create`'s body: every field the platform requires (422 otherwise), as it checks them. */
const NEW_CAMPAIGN: Json = {
  type: 'object',
  required: ['userId', 'name', 'adDomain', 'clickUrl', 'dates', 'country', 'bid', 'budget', 'creativeSetIds'],
  properties: {
    userId: { ...ID, description: 'The account the campaign is made for: one the team may use.' },
    name: { type: 'string', minLength: 1 },
    adDomain: { type: 'string', minLength: 1 },
    clickUrl: { type: 'string', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/]+', description: 'An http(s) URL.' },
    autoStart: { ...FLAG, description: 'Start at once (`active`); off: `paused`.' },
    dates: { type: 'object', required: ['from', 'to'], properties: { from: DATE, to: { ...DATE, description: 'Not before `from`.' } } },
    country: { type: 'string', pattern: '^[A-Za-z]{2}$', description: 'ISO 3166 alpha-2.' },
    bid: positive('The bid, in the account\'s currency.'),
    budget: { type: 'object', required: ['daily', 'total'], properties: { daily: positive('Daily budget.'), total: positive('Total budget.') } },
    creativeSetIds: {
      type: 'array',
      minItems: 1,
      items: { type: 'integer' },
      description: 'The creative sets the campaign shows. A team limited to some advertisers may name only sets of its own advertisers when the gateway looks them up (`ownership.creativeSets.check: lookup`), none when it refuses them (`refuse`, the default): 403 otherwise.',
    },
  },
}

/** A JSON pointer-like dot path (`meta.last_page`) as nested object schemas around `leaf`. */
function at(path: string, leaf: Json): Json {
  const [head, ...rest] = path.split('.') as [string, ...string[]]
  return { type: 'object', required: [head], properties: { [head]: rest.length === 0 ? leaf : at(rest.join('.'), leaf) } }
}

/** The campaign list's answer, where `ownership.fields` says the gateway reads it. */
function campaignList(fields: PlatformPathSettings['fields']): Json {
  const row = { ...CAMPAIGN_SCHEMA, required: [fields.id, fields.userId], properties: { ...(CAMPAIGN_SCHEMA.properties as Json), [fields.id]: ID, [fields.userId]: ID } }
  return {
    description: 'One page of the account\'s campaigns (Laravel\'s pagination); `ownership.fields` names where the gateway reads them.',
    allOf: [at(fields.data, { type: 'array', items: row }), at(fields.lastPage, { type: 'integer', minimum: 1 })],
  }
}

const CAMPAIGN_ID = { name: 'id', in: 'path', required: true, schema: ID, description: 'The campaign\'s id: a team limited to some advertisers may name only its own campaigns (else 403).' }
/** Where a body-less call names its account: a team limited to some advertisers names it (else 403). */
const ACCOUNT_IN_QUERY = {
  name: 'userId',
  in: 'query',
  required: false,
  schema: ID,
  description: 'The account the call acts for. A team limited to some advertisers names it here on a call without a body (DELETE, GET): else 403.',
}
const PAGE = (name: string, description: string) => ({ name, in: 'query', required: false, schema: { type: 'integer', minimum: 1 }, description })

/** `{id}` of a campaign path as an OpenAPI path parameter. */
function pathParameters(path: string): Json[] {
  return path.includes('{id}') ? [CAMPAIGN_ID] : []
}

/**
 * The known platform operations by path and method (lower case). A campaign path of the
 * settings whose methods the platform's documentation does not give has every forwarded
 * method but HEAD, each the plain platform call (`plain: true`).
 */
export function knownPlatformPaths(settings: PlatformPathSettings): Record<string, Record<string, KnownOperation | 'plain'>> {
  const paths: Record<string, Record<string, KnownOperation | 'plain'>> = {}
  for (const path of settings.campaignPaths) {
    paths[path] = Object.fromEntries(['get', 'post', 'put', 'patch', 'delete'].map((m) => [m, 'plain' as const]))
  }
  paths[settings.listPath] = {
    post: {
      operationId: 'listCampaigns',
      summary: 'List an account\'s campaigns (a read, despite the POST)',
      description:
        'The account is `userId` in the body, where the platform reads it: without it the platform lists the token owner\'s (the parent\'s), so a team limited to some advertisers must name one of its own (else 403). ' +
        `The gateway reads its owners from this call too (\`ownership.listPath\`).`,
      parameters: [PAGE('per_page', 'Campaigns per page.'), PAGE('page', 'The page, from 1.')],
      body: { type: 'object', properties: { userId: { ...ID, description: 'The account whose campaigns are listed.' } } },
      success: { status: '200', description: 'One page of the account\'s campaigns.', schema: campaignList(settings.fields) },
    },
  }
  paths['/api/v1/campaign/banner/create'] = {
    post: {
      operationId: 'createCampaign',
      summary: 'Create a banner campaign (a write)',
      description: 'Needs a team with `write: true`, and `userId` an account the team may use. The platform checks every field (422 naming each one wrong).',
      body: NEW_CAMPAIGN,
      success: { status: '201', description: 'The new campaign.', schema: { type: 'object', required: ['data'], properties: { data: CAMPAIGN_SCHEMA } } },
    },
  }
  paths['/api/v1/campaign/banner/delete/{id}'] = {
    delete: {
      operationId: 'deleteCampaign',
      summary: 'Delete a banner campaign (a write)',
      description: 'Needs a team with `write: true`; a team limited to some advertisers may delete only its own campaigns (403 otherwise). The platform answers 404 for an id it does not have.',
      parameters: [ACCOUNT_IN_QUERY],
      success: { status: '200', description: 'Deleted.', schema: { type: 'object', required: ['message'], properties: { message: { type: 'string' } } } },
    },
  }
  for (const path of Object.keys(paths)) {
    for (const op of Object.values(paths[path]!)) if (op !== 'plain') op.parameters = [...pathParameters(path), ...(op.parameters ?? [])]
  }
  return paths
}

/** The parameters of a plain call of a known path (its `{id}`; the account, where a call without a body names it). */
export function plainParameters(path: string, method: string): Json[] {
  return [...pathParameters(path), ...(method === 'get' || method === 'delete' ? [ACCOUNT_IN_QUERY] : [])]
}

/** `/api/v1/campaign/banner/{id}` → `CampaignBannerById`: an operationId's part of a path. */
export function operationName(path: string): string {
  return path
    .replace(/^\/api\/v1\//, '')
    .split('/')
    .map((part) => (part === '{id}' ? 'ById' : part.replace(/(^|[^A-Za-z0-9])([a-z])/g, (_m, _sep: string, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, '')))
    .join('')
}

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/config.js'
import { buildGateway, withTestSecret } from '../helpers/build-gateway.js'
import { loadConfigFrom } from '../helpers/load-config.js'
import { BASE_ENV, cases, RUNS, SEED, secret, shownPart, withCase, type Case } from '../helpers/malformed-secrets.js'

// Every malformed form of a secret (test/helpers/malformed-secrets.ts), each with a
// generated secret. Whatever the form: the start error names the variable and never holds
// the secret or 8 characters of it, in loadConfig and in the built app's log. The process's
// own start output: test/slow/malformed-secrets-process.test.ts.

function attempt(c: Case): { error: string | null; config: ReturnType<typeof loadConfigFrom> | null } {
  try {
    return { error: null, config: loadConfigFrom({ ...BASE_ENV, ...c.env }, c.files) }
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    return { error: err.message, config: null }
  }
}

describe('a malformed secret, wherever it is set', () => {
  it('is refused at start by an error that names its variable and shows no part of the secret', () => {
    fc.assert(
      fc.property(withCase, ({ s, c }) => {
        const { error } = attempt(c)
        if (c.refused) expect(error, c.form).not.toBeNull()
        if (error === null) return
        expect(error, c.form).toContain(c.names)
        expect(shownPart(error, s), `${c.form}: ${error}`).toBeNull()
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it('covers every form at least once with the seed CI runs', () => {
    const forms = new Set<string>()
    fc.assert(
      fc.property(withCase, ({ c }) => {
        forms.add(c.form)
      }),
      { numRuns: RUNS * 5, seed: SEED },
    )
    expect([...forms].length).toBe(cases('x'.repeat(20)).length)
  })

  it('when taken (an opaque token), builds and starts an app whose log shows no part of it', async () => {
    await fc.assert(
      fc.asyncProperty(withCase, async ({ s, c }) => {
        const { config } = attempt(c)
        if (config === null) return
        const gw = await buildGateway(config)
        try {
          await gw.proxy.inject({ method: 'GET', url: '/api/v1/campaign/get', headers: { 'x-api-key': 'rgw_unknown' } })
        } finally {
          await gw.close()
        }
        expect(shownPart(gw.logs.text(), s), c.form).toBeNull()
      }),
      { numRuns: Math.ceil(RUNS / 4), seed: SEED },
    )
  })

  // A Redis that cannot be reached with a password in its URL: connection errors are logged.
  it('keeps a REDIS_URL password out of the log of a Redis that cannot be reached', async () => {
    await fc.assert(
      fc.asyncProperty(secret, async (s) => {
        const gw = await buildGateway(loadConfigFrom(withTestSecret({ ...BASE_ENV, REDIS_URL: `redis://default:${s}@127.0.0.1:1/0`, LOG_LEVEL: 'debug' })))
        await gw.close()
        expect(shownPart(gw.logs.text(), s)).toBeNull()
      }),
      { numRuns: 3, seed: SEED },
    )
  })
})

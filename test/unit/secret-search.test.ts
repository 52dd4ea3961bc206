import fc from 'fast-check'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { percentDecoded, SecretSearch, wordsOf } from '../../src/observe/secret-search.js'
import { SecretSet } from '../../src/observe/logger.js'
import { AdminAuth } from '../../src/access/admin-auth.js'
import { sha256Hex } from '../../src/config/secret-digest.js'

const TOKEN = 'eyJhbGciOi.platform-token_0123456789'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const PASSWORD = 'pa55 w0rd+ünï"/'

describe('SecretSearch', () => {
  const search = new SecretSearch()
  search.add(TOKEN)
  search.add(PASSWORD)
  search.add('short1')

  it.each([
    ['the secret alone', TOKEN, true],
    ['at the start of a text', `${TOKEN}&x=1`, true],
    ['at its end', `Bearer ${TOKEN}`, true],
    ['in its middle', `a${PASSWORD}b`, true],
    ['a secret of another length', 'x=short1', true],
    ['all but its last character', TOKEN.slice(0, -1), false],
    ['all but its first character', `x${TOKEN.slice(1)}`, false],
    ['one character changed', `${TOKEN.slice(0, 10)}X${TOKEN.slice(11)}`, false],
    ['its letters in another case', TOKEN.toUpperCase(), false],
    ['an empty text', '', false],
    ['a text shorter than every secret', 'abc', false],
  ])('%s: %s', (_name, text, found) => {
    expect(search.in(text)).toBe(found)
  })

  it('finds each of many secrets of one length (every platform token a long run replaced)', () => {
    const many = new SecretSearch()
    const tokens = Array.from({ length: 500 }, (_, i) => `${TOKEN}${String(i).padStart(4, '0')}`)
    for (const t of tokens) many.add(t)
    expect(tokens.every((t) => many.in(`/r?a=1&b=${t}&c=2`))).toBe(true)
    expect(many.in(`/r?b=${TOKEN}9999`)).toBe(false)
  })

  it('finds a secret at the very start and the very end of a MiB of text, and none in a MiB without one', () => {
    const mib = 'é'.repeat(1 << 20)
    const one = new SecretSearch()
    one.add(TOKEN)
    const many = new SecretSearch()
    for (let i = 0; i < 20; i++) many.add(`${TOKEN.slice(0, -2)}${String(i).padStart(2, '0')}`)
    many.add(TOKEN)
    for (const search of [one, many]) {
      expect([search.in(`${TOKEN}${mib}`), search.in(`${mib}${TOKEN}`), search.in(mib), search.in(`${mib}${TOKEN.slice(0, -1)}`)]).toEqual([true, true, false, false])
    }
  })

  it('finds a secret exactly where the text holds it, whatever characters of the whole UTF-16 range surround it', () => {
    const secrets = [TOKEN, PASSWORD, 'short1', '\uffff\u8000\u0001 high units']
    const search = new SecretSearch()
    for (const s of secrets) search.add(s)
    const piece = fc.oneof(fc.constantFrom(...secrets), fc.constantFrom(...secrets).map((s) => s.slice(1)), fc.string({ unit: 'binary', maxLength: 20 }))
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 10 }), (pieces) => {
        const text = pieces.join('')
        expect(search.in(text)).toBe(secrets.some((s) => text.includes(s)))
      }),
      { numRuns: 500, seed: 142 },
    )
  })

  it('finds a secret added after others, and one added twice once', () => {
    const later = new SecretSearch()
    expect(later.in(`x ${TOKEN}`)).toBe(false)
    later.add(TOKEN)
    later.add(TOKEN)
    later.add(`${TOKEN}-next`)
    expect([later.in(`x ${TOKEN}`), later.in(`${TOKEN}-next`), later.in(TOKEN.slice(1))]).toEqual([true, true, false])
  })
})

describe('SecretSearch: the memory a secret keeps', () => {
  // A small Buffer is a view of a slab of Buffer's shared pool (8 KiB on Node 20, 64 KiB on
  // Node 24) that every small Buffer made meanwhile shares: one kept holds its whole slab
  // alive. A long-running replica adds a secret at each token put and platform token
  // renewal and keeps it for good.
  it('holds no slab of Buffer\'s pool alive for any of 50 secrets added while the pool moved on', async () => {
    const search = new SecretSearch()
    const slabs: WeakRef<ArrayBufferLike>[] = []
    for (let i = 0; i < 50; i++) {
      const slab = Buffer.from('slab of this secret').buffer
      slabs.push(new WeakRef(slab))
      search.add(`${TOKEN}-${i}`)
      while (Buffer.from('the next slab').buffer === slab);
    }
    for (let round = 0; round < 3; round++) {
      await new Promise((resolve) => setImmediate(resolve))
      gc()
    }
    await new Promise((resolve) => setImmediate(resolve))
    expect(slabs.filter((ref) => ref.deref() !== undefined).length).toBe(0)
    expect(search.in(`/r?t=${TOKEN}-49`)).toBe(true)
  })
})

describe('percentDecoded', () => {
  // Each run of escapes as the UTF-8 decoder reads its bytes, made the plain way: the hex digits as a hex string.
  const reference = (text: string) => text.replace(/\+/g, ' ').replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => new TextDecoder('utf-8').decode(Buffer.from(run.replace(/%/g, ''), 'hex')))

  it('reads `+` as a space and each run of escapes, digits in either case, as UTF-8 (U+FFFD for bytes that are none), stray `%` as it is', () => {
    const unit = fc.constantFrom('%', '+', 'a', 'F', '0', '9', 'é', ' ', '%C3', '%a9', '%E2%82%AC', '%ff', '%4', '%zz')
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 30 }), (units) => {
        const text = units.join('')
        expect(percentDecoded(text)).toBe(reference(text))
      }),
      { numRuns: 1000, seed: 142 },
    )
    expect(percentDecoded('a+b%C3%A9%2B%zz%')).toBe('a bé+%zz%')
  })
})

describe('SecretSearch.inDecoded: the decoded text searched around its changes only', () => {
  const RUNS = Number(process.env.PROPERTY_RUNS ?? 300)
  const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : process.env.PROPERTY_RUNS ? Date.now() : 97
  const spaced = new SecretSearch()
  spaced.add(PASSWORD)
  spaced.add('open sesame 12')
  const unspaced = new SecretSearch()
  unspaced.add(TOKEN)
  unspaced.add('a+b%41c')
  const escaped = (text: string, lower: boolean) => [...Buffer.from(text)].map((b) => `%${lower ? b.toString(16) : b.toString(16).toUpperCase()}`).join('')
  // Pieces of secrets as they are and escaped, `+` for a space, escapes of nothing (a byte-order mark), broken escapes, filler.
  const piece = fc.oneof(
    fc.constantFrom(TOKEN, PASSWORD, 'open+sesame+12', 'short1', 'a+b%41c', ' ', '+', '%', '%EF%BB%BF', '%4', '%zz', '%C3', '%BC', 'x', '.'),
    fc.tuple(fc.constantFrom(TOKEN, PASSWORD, 'open sesame 12', 'short1'), fc.nat(40), fc.nat(40), fc.boolean()).map(([secret, a, b, lower]) => {
      const [from, to] = [Math.min(a, b) % (secret.length + 1), Math.max(a, b) % (secret.length + 1)]
      return `${secret.slice(0, from)}${escaped(secret.slice(from, to), lower)}${secret.slice(to)}`
    }),
    fc.string({ unit: fc.constantFrom('a', 'e', '4', '1', '%', '+', ' ', 'ü'), maxLength: 12 }),
  )

  it('with the text as it is, finds what a search of the whole decoded text finds', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 14 }), (pieces) => {
        const text = pieces.join('')
        for (const search of [spaced, unspaced]) expect(search.in(text) || search.inDecoded(text)).toBe(search.in(text) || search.in(percentDecoded(text)))
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it.each([
    ['escaped whole', escaped(TOKEN, false), true],
    ['cut by an escape of nothing', `${TOKEN.slice(0, 9)}%EF%BB%BF${TOKEN.slice(9)}`, true],
    ['one character escaped far from the others', `q=${TOKEN.slice(0, 30)}%${TOKEN.charCodeAt(30).toString(16)}${TOKEN.slice(31)}`, true],
    ['as it is only', `q=${TOKEN}`, false],
    ['with no change at all', 'plain text', false],
  ])('%s', (_name, text, found) => {
    expect(unspaced.inDecoded(text)).toBe(found)
  })
})

describe('SecretSet.holds', () => {
  const secrets = new SecretSet()
  secrets.add(TOKEN)
  secrets.add(PASSWORD)

  it.each([
    ['as it is', `q=${TOKEN}`],
    ['percent-encoded, every byte', `q=${[...Buffer.from(PASSWORD)].map((b) => `%${b.toString(16)}`).join('')}`],
    ['as encodeURIComponent writes it', `q=${encodeURIComponent(PASSWORD)}`],
    ['with + for its space', `q=${encodeURIComponent(PASSWORD).replace('%20', '+')}`],
    ['as JSON.stringify writes it', JSON.stringify({ q: PASSWORD })],
    ['in bytes read a character a byte, as a body passed on as it comes is', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(PASSWORD), Buffer.from([0xc3])]).toString('latin1')],
  ])('finds a secret %s', (_name, text) => {
    expect(secrets.holds(text)).toBe(true)
  })

  it('finds no secret in a text without one, nor one too short to be kept', () => {
    secrets.add('short')
    expect(secrets.holds(`q=${encodeURIComponent(TOKEN.slice(1))}&x=short`)).toBe(false)
  })
})

describe('SecretSet.searching: a search in pieces, between which the event loop is free', () => {
  const RUNS = Number(process.env.PROPERTY_RUNS ?? 300)
  const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : process.env.PROPERTY_RUNS ? Date.now() : 146
  const secrets = new SecretSet()
  secrets.add(TOKEN)
  secrets.add(PASSWORD)
  secrets.add('short1')
  /** What the search found, and how many times it yielded before. */
  const drained = (search: Generator<void, boolean>): [found: boolean, pieces: number] => {
    let pieces = 0
    for (let step = search.next(); ; step = search.next(), pieces++) if (step.done === true) return [step.value, pieces]
  }
  const part = fc.oneof(
    fc.constantFrom(TOKEN, PASSWORD, encodeURIComponent(PASSWORD), encodeURIComponent(PASSWORD).replace('%20', '+'), 'short1', '%', '+', '%C3', 'x'),
    fc.string({ unit: fc.constantFrom('a', '4', '%', '+', ' ', 'ü'), maxLength: 30 }),
  )

  it('finds what holds finds, a secret across the edge of a piece included, whatever the pieces\' size', () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 10 }), fc.integer({ min: 1, max: 40 }), (parts, piece) => {
        const text = parts.join('')
        expect(drained(secrets.searching(text, piece))[0]).toBe(secrets.holds(text))
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it('searches a MiB without a secret in pieces of `piece` windows, yielding between two', () => {
    const mib = 'a'.repeat(1 << 20)
    expect(drained(secrets.searching(mib, 1 << 16))).toEqual([false, 15])
    expect(drained(secrets.searching(`${mib.slice(0, (1 << 16) - 3)}${TOKEN}${mib}`, 1 << 16))).toEqual([true, 0])
  })
})

describe('SecretSet: a value scrubbed alone, then a secret of the gateway\'s', () => {
  it('finds the secret though the same text was first added as scrubbed only (a team\'s webhook secret equal to it)', () => {
    const secrets = new SecretSet()
    const value = 'shared-text-0123456789abcdef'
    secrets.addScrubbed(value)
    expect(secrets.holds(`q=${value}`)).toBe(false)
    secrets.add(value)
    expect(secrets.holds(`q=${value}`)).toBe(true)
    expect(secrets.scrub(`q=${value}`)).not.toContain(value)
  })

  it('says a text holds a value the log scrubs, searched for or not (holdsScrubbed), as scrub finds it', () => {
    const secrets = new SecretSet()
    expect(secrets.holdsScrubbed('Summer2026 promo')).toBe(false)
    secrets.addLogOnly('Summer2026')
    secrets.add('admin-token-0123456789abcdef')
    expect(secrets.holdsScrubbed('/api/v1/campaign/Summer2026promo/get')).toBe(true)
    expect(secrets.holdsScrubbed('q=admin-token-0123456789abcdef')).toBe(true)
    // Asked again: the pattern's place is not kept between texts.
    expect(secrets.holdsScrubbed('/api/v1/campaign/Summer2026promo/get')).toBe(true)
    expect(secrets.holdsScrubbed('Summer2027 promo')).toBe(false)
    expect(secrets.holds('Summer2026 promo')).toBe(false)
  })

  it('scrubs a value added for the log alone (a short login password) from the log\'s lines only: a copy a caller reads (scrubShown) writes it as sent, and every other value as the log does', () => {
    const secrets = new SecretSet()
    secrets.addLogOnly('Summer2026')
    expect(secrets.scrubShown('/campaign/Summer2026"x')).toBe('/campaign/Summer2026"x')
    secrets.add('admin-token-0123456789abcdef')
    secrets.addScrubbed('whsec_Xk3+pQ7vLm2Rt9Wz4Bc8Nd1F')
    const text = 'Summer2026 Summer2026\\"x admin-token-0123456789abcdef whsec_Xk3+pQ7vLm2Rt9Wz4Bc8Nd1F rgw_test_all_teams_key_000000000000000000000'
    expect(secrets.scrub(text)).toBe('[REDACTED] [REDACTED]\\"x [REDACTED] [REDACTED] [REDACTED]')
    expect(secrets.scrubShown(text)).toBe('Summer2026 Summer2026\\"x [REDACTED] [REDACTED] [REDACTED]')
    expect(secrets.holds('Summer2026')).toBe(false)
    // Added as a secret of the gateway's too, it is scrubbed from both.
    secrets.add('Summer2026')
    expect(secrets.scrubShown(text)).not.toContain('Summer2026')
  })
})

describe('AdminAuth.heldIn: a token known by its digest alone', () => {
  const token = 'named.operator~token_0123456789'
  const auth = new AdminAuth([{ name: 'ops', hash: `sha256:${sha256Hex(token)}`, role: 'operator' }])

  it.each([
    ['a query value', `a=1&q=${token}`, true],
    ['a query value percent-encoded', `q=${encodeURIComponent(token).replace(/o/g, '%6F')}`, true],
    ['a word of a header', `Bearer ${token}`, true],
    ['a JSON string', JSON.stringify({ note: token }), true],
    ['a Laravel array value', `a[x]=${token}`, true],
    ['part of a longer word', `q=x${token}`, false],
    ['no token', 'q=named.operator~token_012345678', false],
  ])('%s: %s', (_name, text, held) => {
    expect(auth.heldIn(text)).toBe(held)
  })

  it('finds nothing without admin tokens', () => {
    expect(new AdminAuth([]).heldIn(`q=${token}`)).toBe(false)
  })

  it('leaves to the search of the secrets the tokens given in the clear too: heldInUnsearched finds the named ones only, heldIn every one', () => {
    const [plain, viewer] = ['admin.token~in_the_clear_0123', 'viewer.token~in_the_clear_0123']
    const entry = (t: string, name: string) => ({ name, hash: `sha256:${sha256Hex(t)}`, role: 'operator' as const })
    const both = new AdminAuth([entry(plain, 'admin'), entry(viewer, 'viewer'), entry(token, 'ops')], [plain, viewer])
    expect([plain, viewer, token].map((t) => [both.heldIn(`q=${t}`), both.heldInUnsearched(`q=${t}`)])).toEqual([[true, false], [true, false], [true, true]])
    both.replace([entry(plain, 'admin'), entry(viewer, 'viewer')], [plain, null])
    expect([plain, viewer].map((t) => both.heldInUnsearched(`q=${t}`))).toEqual([false, true])
    // Given none in the clear, every token is its digest alone.
    expect(new AdminAuth([entry(plain, 'admin')]).heldInUnsearched(`q=${plain}`)).toBe(true)
  })

  it.each([
    ['a control character', `${token}\x01`],
    ['DEL', `\x7f${token}`],
    ['a character past Latin-1', `${token}\u0100`],
  ])('does not take a word holding %s for a token: no request head carries it', (_name, word) => {
    const odd = new AdminAuth([{ name: 'odd', hash: `sha256:${sha256Hex(word)}`, role: 'operator' }])
    expect([odd.heldIn(`q=${word}`), odd.heldIn(`q=${encodeURIComponent(word)}`)]).toEqual([false, false])
  })
})

describe('AdminAuth.heldInLogged: a log text\'s verdict remembered until the tokens are replaced', () => {
  const token = 'named.operator~token_0123456789'
  const other = 'another.operator~token_98765432'
  const entry = (t: string, name: string) => ({ name, hash: `sha256:${sha256Hex(t)}`, role: 'operator' as const })

  it('says what heldIn says, asked once or again', () => {
    const auth = new AdminAuth([entry(token, 'ops')])
    for (const text of [`/api/v1/campaign/${token}/get`, '/api/v1/report/campaigns/get', `Mozilla/5.0 ${token}`]) {
      expect([auth.heldInLogged(text), auth.heldInLogged(text)]).toEqual([auth.heldIn(text), auth.heldIn(text)])
    }
  })

  it('finds a token added by a reload in a text it found nothing in before', () => {
    const auth = new AdminAuth([entry(token, 'ops')])
    const path = `/api/v1/campaign/${other}/get`
    expect(auth.heldInLogged(path)).toBe(false)
    auth.replace([entry(token, 'ops'), entry(other, 'oncall')])
    expect(auth.heldInLogged(path)).toBe(true)
  })

  it('finds a token in a text past the remembered length, and in texts past the remembered count', () => {
    const auth = new AdminAuth([entry(token, 'ops')])
    expect(auth.heldInLogged(`${'x/'.repeat(400)}${token}`)).toBe(true)
    for (let i = 0; i < 1100; i++) expect(auth.heldInLogged(`/api/v1/campaign/${i}/get`)).toBe(false)
    expect(auth.heldInLogged(`/api/v1/campaign/${token}/get`)).toBe(true)
  })
})

describe('AdminAuth.heldIn in one pass: finds what the words of the text and of its whole decoded form found', () => {
  const RUNS = Number(process.env.PROPERTY_RUNS ?? 300)
  const SEED = process.env.PROPERTY_SEED !== undefined ? Number(process.env.PROPERTY_SEED) : process.env.PROPERTY_RUNS ? Date.now() : 98
  // The search before the one pass: every word of the text and, when it holds a `%` or a `+`, of its whole decoded form.
  const SEPARATORS = /[\s&=,;:"'()<>[\]{}]+/
  const wordsBefore = (text: string, minLength: number) => {
    const words = new Set<string>()
    for (const form of /[%+]/.test(text) ? [text, percentDecoded(text)] : [text]) for (const word of form.split(SEPARATORS)) if (word.length >= minLength) words.add(word)
    return words
  }
  // Tokens a head can carry: letters and signs, Latin-1 letters, a `+` and a `%` of their own.
  const tokens = ['named.operator~token_0123456789', 'tökén-wïth-lätin1-0123', 'plus+token+0123456789', 'pct%41token0123456789ab']
  const auth = new AdminAuth(tokens.map((t, i) => ({ name: `ops${i}`, hash: `sha256:${sha256Hex(t)}`, role: 'operator' as const })))
  const escaped = (text: string, lower: boolean) => [...Buffer.from(text)].map((b) => `%${lower ? b.toString(16) : b.toString(16).toUpperCase()}`).join('')
  // Tokens as they are, partly escaped, cut, with `+` for a space; separators of every kind; escapes of nothing, broken escapes, characters no head carries.
  const piece = fc.oneof(
    fc.constantFrom(...tokens),
    fc.tuple(fc.constantFrom(...tokens), fc.nat(40), fc.nat(40), fc.boolean()).map(([t, a, b, lower]) => {
      const [from, to] = [Math.min(a, b) % (t.length + 1), Math.max(a, b) % (t.length + 1)]
      return `${t.slice(0, from)}${escaped(t.slice(from, to), lower)}${t.slice(to)}`
    }),
    fc.constantFrom(' ', '+', '%20', '&', '=', '"', ':', '\t', '\u00a0', '\u3000', '%', '%EF%BB%BF', '%4', '%zz', '%C3', '%26', '\x01', '\x7f', '\u0100', 'é', 'x', '.'),
    fc.string({ unit: fc.constantFrom('a', '4', '%', '+', ' ', '=', 'ü'), maxLength: 20 }),
  )

  it('yields the words of the text and of its decoded form', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 14 }), fc.constantFrom(1, 4, 16), (pieces, minLength) => {
        const text = pieces.join('')
        expect(new Set(wordsOf(text, minLength))).toEqual(wordsBefore(text, minLength))
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })

  it('finds a token wherever the words of the text and of its whole decoded form held it', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 14 }), (pieces) => {
        const text = pieces.join('')
        expect(auth.heldIn(text)).toBe([...wordsBefore(text, 16)].some((word) => auth.verify(word) !== null))
      }),
      { numRuns: RUNS, seed: SEED },
    )
  })
})

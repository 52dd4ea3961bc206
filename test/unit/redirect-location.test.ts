import { describe, expect, it } from 'vitest'
import { linksOnGateway, onGateway, refreshOnGateway } from '../../src/platform/client/redirect-location.js'

const PLATFORM = 'https://dsp.example:8443'

describe('URLs a caller may follow, put on the gateway', () => {
  it('a location naming the platform\'s host is its path, query and fragment; another host\'s or a relative one as it is', () => {
    expect(onGateway('https://DSP.example:8443/api/v1/x?a=1#f', PLATFORM)).toBe('/api/v1/x?a=1#f')
    expect(onGateway('https://other.example/api/v1/x', PLATFORM)).toBe('https://other.example/api/v1/x')
    expect(onGateway('/api/v1/x', PLATFORM)).toBe('/api/v1/x')
    expect(onGateway('x?page=2', PLATFORM)).toBe('x?page=2')
    expect(onGateway('//other.example/x', PLATFORM)).toBe('//other.example/x')
  })

  it('the platform\'s host in another scheme or port, or as a network-path reference, is the platform\'s too', () => {
    for (const spelling of ['http://dsp.example/api/v1/x', 'https://dsp.example/api/v1/x', 'http://dsp.example:8443/api/v1/x', '//dsp.example:8443/api/v1/x', '/\\DSP.example/api/v1/x', ' //dsp.example/api/v1/x']) {
      expect(onGateway(spelling, PLATFORM), spelling).toBe('/api/v1/x')
    }
    expect(linksOnGateway('<//dsp.example:8443/api/v1/c?page=2>; rel="next"', PLATFORM)).toBe('</api/v1/c?page=2>; rel="next"')
    expect(refreshOnGateway('0; url=http://dsp.example/api/v1/c', PLATFORM)).toBe('0; url=/api/v1/c')
  })

  it('every target of a link header, whatever its parameters and commas', () => {
    expect(linksOnGateway(`<${PLATFORM}/api/v1/c?page=2>; rel="next"; title="a, b", <https://other.example/a,b>; rel=help`, PLATFORM)).toBe(
      '</api/v1/c?page=2>; rel="next"; title="a, b", <https://other.example/a,b>; rel=help',
    )
    expect(linksOnGateway('rel=next', PLATFORM)).toBe('rel=next')
  })

  it('no link a browser or a front server follows by itself (a preload, a prefetch, a connection made ahead), to any origin; the others kept in order', () => {
    const hints = [
      '<https://cdn.example/app.js>; rel=preload; as=script',
      '</build/app.js>; rel=modulepreload',
      '<https://tracker.example>; rel=preconnect',
      '<//tracker.example>; rel="dns-prefetch"',
      `<${PLATFORM}/api/v1/c?page=2>; rel="next prefetch"`,
      '<https://cdn.example/x>; REL=PreLoad',
      '<https://cdn.example/next>; rel=prerender',
      '<https://cdn.example/dict>; rel=compression-dictionary',
      '<https://cdn.example/a.css>; rel=stylesheet',
      '<https://cdn.example/sw.js>; rel=serviceworker',
      // A quoted text before it that looks like another relation changes nothing.
      '<https://cdn.example/y>; title="; rel=next"; rel=preload',
      '<https://cdn.example/z>; rel="\\pre\\load"',
    ]
    const kept = [`<${PLATFORM}/api/v1/c?page=3>; rel=next; title="a, rel=preload"`, '<https://docs.example/api?a=1,2>; rel=help']
    expect(linksOnGateway([hints[0], kept[0], ...hints.slice(1, 5), kept[1], ...hints.slice(5)].join(', '), PLATFORM)).toBe(
      '</api/v1/c?page=3>; rel=next; title="a, rel=preload", <https://docs.example/api?a=1,2>; rel=help',
    )
    expect(linksOnGateway(hints.join(','), PLATFORM)).toBe('')
  })

  it('the URL of a refresh header, quoted or not; a refresh without a URL as it is', () => {
    expect(refreshOnGateway(`0; url=${PLATFORM}/api/v1/c`, PLATFORM)).toBe('0; url=/api/v1/c')
    expect(refreshOnGateway(`2.5,URL="${PLATFORM}/x?y=1" `, PLATFORM)).toBe('2.5,URL="/x?y=1" ')
    expect(refreshOnGateway("5;URL='https://status.example/'", PLATFORM)).toBe("5;URL='https://status.example/'")
    expect(refreshOnGateway('30', PLATFORM)).toBe('30')
  })
})

import { describe, expect, it } from 'vitest'
import { listenFailure } from '../../src/listen-failure.js'

// A resolver's failure carries the name it looked up (`hostname`), as Node's getaddrinfo errors do.
const failure = (code: string, message: string) => Object.assign(new Error(message), { code }, code.startsWith('E') && message.startsWith('getaddrinfo') ? { hostname: message.split(' ').at(-1) } : {})

// What the start's line says when a listener cannot open (main.ts: `cannot listen on <host>:<port>: <why>`).
describe('listenFailure', () => {
  it.each([
    ['EADDRINUSE', 'listen EADDRINUSE: address already in use 127.0.0.1:8080', 'the port is in use by another process: stop it, or choose a free port'],
    ['EACCES', 'listen EACCES: permission denied 0.0.0.0:80', 'permission denied'],
    ['EADDRNOTAVAIL', 'listen EADDRNOTAVAIL: address not available 10.9.9.9:8080', 'no such address on this machine'],
    ['ENOTFOUND', 'getaddrinfo ENOTFOUND localhsot', 'the name localhsot has no address (getaddrinfo ENOTFOUND): write an IP address of this machine, or a name that resolves to one'],
    ['EAI_AGAIN', 'getaddrinfo EAI_AGAIN gw.reports.svc', 'the name gw.reports.svc could not be resolved now (getaddrinfo EAI_AGAIN: the resolver did not answer): write an IP address of this machine, or try again once DNS answers'],
  ])('%s: %s', (code, message, why) => {
    expect(listenFailure(failure(code, message))).toBe(why)
  })

  it('tells a code it does not know as Node does', () => {
    expect(listenFailure(failure('EINVAL', 'listen EINVAL: invalid argument'))).toBe('listen EINVAL: invalid argument')
  })
})

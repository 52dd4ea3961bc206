import { createServer, type AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { atPort, listenerPort, listenerServers } from '../../src/http/openapi/document.js'

describe('atPort', () => {
  it('names the port in the server by address alone, and leaves the document it reads as it is', () => {
    const doc = { openapi: '3.1.0', servers: listenerServers('proxy', 'A gateway by address.', 8080) }
    const served = atPort(doc, 9123) as typeof doc
    expect(served.servers.map((s) => [s.url, s.variables?.port.default, s.variables?.host.default])).toEqual([['/', undefined, undefined], ['{scheme}://{host}:{port}', '9123', '127.0.0.1']])
    expect(served.openapi).toBe('3.1.0')
    expect(doc.servers[1]).toMatchObject({ variables: { port: { default: '8080' } } })
  })
})

describe('listenerPort', () => {
  it("is the setting's before the server listens, the bound port after", async () => {
    const server = createServer()
    expect(listenerPort(server, 8080)).toBe(8080)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      expect(listenerPort(server, 0)).toBe((server.address() as AddressInfo).port)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

import { describe, expect, it } from 'vitest'
import { completeCommands } from '../helpers/fake-sentinel.js'

const command = (...parts: string[]) => `*${parts.length}\r\n${parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join('')}`

describe("the fake Sentinel's reading of commands", () => {
  it('answers each command of a chunk: two in one write are two commands', () => {
    const chunk = Buffer.from(command('client', 'SETINFO', 'LIB-NAME', 'ioredis') + command('client', 'SETINFO', 'LIB-VER', '5.11.1'))
    const { commands, used } = completeCommands(chunk)
    expect(commands).toEqual([
      ['client', 'SETINFO', 'LIB-NAME', 'ioredis'],
      ['client', 'SETINFO', 'LIB-VER', '5.11.1'],
    ])
    expect(used).toBe(chunk.length)
  })

  it('keeps a command cut across chunks until its rest comes', () => {
    const whole = command('sentinel', 'get-master-addr-by-name', 'mymaster')
    for (let cut = 1; cut < whole.length; cut++) {
      const first = completeCommands(Buffer.from(whole.slice(0, cut)))
      expect(first, `cut at ${cut}`).toEqual({ commands: [], used: 0 })
    }
    expect(completeCommands(Buffer.from(whole)).commands).toEqual([['sentinel', 'get-master-addr-by-name', 'mymaster']])
  })
})

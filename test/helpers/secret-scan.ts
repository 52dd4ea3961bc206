import type { Sandbox } from '../../src/sandbox/sandbox.js'
import { KEYS } from './build-gateway.js'

/**
 * The secrets a log text holds: each as it is, and as the byte values a logged Buffer
 * or `rawPacket` would show (`[114,103,119,…]` or `"0":114,"1":103,…`).
 */
export function leakedSecrets(text: string, secrets: Iterable<string>): string[] {
  const leaked: string[] = []
  const numbers = text.replace(/"\d+":/g, '').replace(/\s/g, '')
  for (const secret of secrets) {
    if (secret.length < 8) continue
    const bytes = [...Buffer.from(secret.slice(0, 16))].join(',')
    if (text.includes(secret) || numbers.includes(bytes)) leaked.push(secret)
  }
  return leaked
}

/** Every secret of a sandbox-backed test run: team keys, the platform tokens it saw, its credentials, and `extra`. */
export function runSecrets(sandbox: Sandbox, extra: readonly string[] = []): Set<string> {
  const secrets = new Set<string>([...Object.values(KEYS), sandbox.credentials.password, sandbox.credentials.clientSecret, ...extra])
  for (const r of sandbox.requests) {
    const token = String(r.headers.authorization ?? '').replace(/^Bearer /, '')
    if (token) {
      secrets.add(token)
      // A JWT's signature alone would identify it too.
      secrets.add(token.split('.').at(-1) as string)
    }
  }
  return secrets
}

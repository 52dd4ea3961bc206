import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { needTool, TOOLS } from './missing-tools.js'

// A private CA, as a cluster's cert-manager issuer is one, and a server certificate it
// signs: the Redis over TLS tests run redis-server with it and name the CA to the
// gateway process through NODE_EXTRA_CA_CERTS.

export interface PrivateCa {
  /** The CA's certificate (PEM). */
  ca: string
  /** The server's certificate and key (PEM). */
  cert: string
  key: string
}

/** Whether openssl runs here; without it `what` is skipped, and the run says so. */
export function opensslAvailable(what: string): boolean {
  let found = true
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' })
  } catch {
    found = false
  }
  return needTool(TOOLS.openssl, found, what)
}

/**
 * A CA and a certificate it signs for `names` (subjectAltName entries: `DNS:localhost`,
 * `IP:127.0.0.1`), written in `dir`.
 */
export function privateCa(dir: string, names: string[]): PrivateCa {
  const at = (name: string) => join(dir, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' })
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=report-gateway test CA')
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=report-gateway test Redis')
  writeFileSync(at('san.ext'), `subjectAltName=${names.join(',')}\n`)
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'san.ext')
  return { ca: at('ca.crt'), cert: at('server.crt'), key: at('server.key') }
}

/** What a name the resolver failed on is told with, by the failure's code. */
const UNRESOLVED: Record<string, string> = {
  ENOTFOUND: 'has no address (getaddrinfo ENOTFOUND): write an IP address of this machine, or a name that resolves to one',
  EAI_AGAIN: 'could not be resolved now (getaddrinfo EAI_AGAIN: the resolver did not answer): write an IP address of this machine, or try again once DNS answers',
}

/** What a listener failed with, by its code. */
const LISTEN_FAILURES: Record<string, string> = {
  EADDRINUSE: 'the port is in use by another process: stop it, or choose a free port',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'no such address on this machine',
}

/**
 * Why a listener could not open, in words an operator acts on: the name the resolver
 * failed on (Node's getaddrinfo errors carry it as `hostname`), or what `listen` failed
 * with, and what to change. A failure these words do not cover is told as Node tells it.
 */
export function listenFailure(err: NodeJS.ErrnoException & { hostname?: string }): string {
  const code = err.code ?? ''
  if (err.hostname !== undefined && Object.hasOwn(UNRESOLVED, code)) return `the name ${err.hostname} ${UNRESOLVED[code]}`
  return Object.hasOwn(LISTEN_FAILURES, code) ? LISTEN_FAILURES[code]! : err.message
}

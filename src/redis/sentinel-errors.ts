// What a Sentinel's refusal means for the operator. ioredis reports a Sentinel that
// answers but names no master as "All sentinels are unreachable … Last error: ERR No such
// master with that name": the Sentinels are reached, and the setting to fix is the name;
// and one that refuses its login alike ("… Last error: NOAUTH …", "WRONGPASS …"): the
// setting to fix is the Sentinels' password.
//
// ioredis also begins each reconnection where the last one left its list of Sentinels:
// one that left it at its end (a master the last Sentinel named refused the connection)
// says "All sentinels are unreachable. Retrying from scratch after 10ms." before it asks
// any Sentinel, with no "Last error". No Sentinel was found unreachable then: the
// connection's known error (the master's refusal) stays its cause.

const NO_SUCH_MASTER = /No such master with that name/
// A Sentinel that asks a password refuses a connection without it (NOAUTH) or with another (WRONGPASS).
const REFUSED_LOGIN = /Last error: (NOAUTH|WRONGPASS)\b/
const NONE_ASKED = /^All sentinels are unreachable\. Retrying from scratch after \d+ms\.$/

/**
 * A connection error of a Sentinel-routed client, with what to fix when the message says
 * it; null when it says nothing of why the connection failed (the cause known before stays);
 * otherwise the message as it is.
 */
export function explainSentinelError(message: string, sentinelName: string, sentinels: string): string | null {
  if (NONE_ASKED.test(message)) return null
  const refused = REFUSED_LOGIN.exec(message)?.[1]
  if (refused === 'NOAUTH') return `the Sentinels (${sentinels}) answer but ask a password (NOAUTH): set REDIS_SENTINEL_PASSWORD (or REDIS_SENTINEL_PASSWORD_FILE) to the one in their sentinel.conf (requirepass)`
  if (refused === 'WRONGPASS') return `the Sentinels (${sentinels}) answer but refuse the password REDIS_SENTINEL_PASSWORD gives (WRONGPASS): set it to the one in their sentinel.conf (requirepass)`
  if (!NO_SUCH_MASTER.test(message)) return message
  return `the Sentinels (${sentinels}) answer but know no master named "${sentinelName}": set redis.sentinelName to the name in their "sentinel monitor" line (SENTINEL MASTERS lists them)`
}

// What a Sentinel's refusal means for the operator. ioredis reports a Sentinel that
// answers but names no master as "All sentinels are unreachable … Last error: ERR No such
// master with that name": the Sentinels are reached, and the setting to fix is the name.

const NO_SUCH_MASTER = /No such master with that name/

/** A connection error of a Sentinel-routed client, with what to fix when the message says it; otherwise the message as it is. */
export function explainSentinelError(message: string, sentinelName: string, sentinels: string): string {
  if (!NO_SUCH_MASTER.test(message)) return message
  return `the Sentinels (${sentinels}) answer but know no master named "${sentinelName}": set redis.sentinelName to the name in their "sentinel monitor" line (SENTINEL MASTERS lists them)`
}

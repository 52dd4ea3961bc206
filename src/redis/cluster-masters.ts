import { Cluster, ReplyError, type Redis } from 'ioredis'

/** A connection as client.ts makes it (RedisClient), named here without importing it back. */
type RedisClient = Redis | Cluster

// A Cluster is whole when every master its slot table names answers, and says the Cluster
// serves every slot (cluster_state:ok: a master back rejoins it a moment later, and until
// then every node answers a command CLUSTERDOWN, which ioredis retries past its command
// timeout). ioredis drops a master whose connection ended from its nodes (it reconnects
// only on a MOVED or a slots refresh), while its slots still name it: a ping of whichever
// node answers says nothing of the slots that master held, so a circuit closed on it
// opened again at the next command for those slots, twice a second for as long as the
// master was down.

/** The masters a slot table names (each slot's first node key, `host:port`), each once, in slot order. */
export function slotMasters(slots: readonly (readonly string[] | undefined)[]): string[] {
  const masters = new Set<string>()
  for (const keys of slots) if (keys?.[0] !== undefined) masters.add(keys[0])
  return [...masters]
}

function connectedMasters(client: Cluster): Map<string, ReturnType<Cluster['nodes']>[number]> {
  return new Map(client.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]))
}

/** The masters of a Cluster's slot table it holds no ready connection to; none on a single connection. */
export function unreachedMasters(client: RedisClient): string[] {
  if (!(client instanceof Cluster)) return []
  const connected = connectedMasters(client)
  return slotMasters(client.slots).filter((key) => connected.get(key)?.status !== 'ready')
}

/**
 * A ping of Redis: on a single connection, of it; on a Cluster, CLUSTER INFO of every
 * master its slot table names (a master it no longer holds a connection to connected again
 * first, by a slots refresh), failing while one says cluster_state:fail; each failure
 * names its master.
 */
export async function pingEveryMaster(client: RedisClient): Promise<void> {
  if (!(client instanceof Cluster)) {
    await client.ping()
    return
  }
  const masters = slotMasters(client.slots)
  if (masters.length === 0) {
    await client.ping()
    return
  }
  if (masters.some((key) => !connectedMasters(client).has(key))) {
    await new Promise<void>((resolve) => client.refreshSlotsCache(() => resolve()))
  }
  const connected = connectedMasters(client)
  await Promise.all(
    masters.map(async (key) => {
      const node = connected.get(key)
      if (!node) throw new Error(`cluster master ${key}: no connection`)
      let info: unknown
      try {
        info = await node.call('CLUSTER', 'INFO')
      } catch (err) {
        // A Redis that refuses CLUSTER INFO (renamed, an ACL) answered: that is a ping's success.
        if (err instanceof ReplyError) return
        throw new Error(`cluster master ${key}: ${(err as Error).message}`, { cause: err })
      }
      if (typeof info === 'string' && /^cluster_state:fail\b/m.test(info)) throw new Error(`cluster master ${key}: cluster_state:fail (the Cluster refuses commands until every slot is served)`)
    }),
  )
}

import type { Delivery } from '../../src/jobs/delivery.js'
import type { DeliveryStore } from '../../src/jobs/delivery-store.js'

/** The deliveries a deliverer may claim at `now`, the earliest due first, at most `limit`: their ids, then their records. */
export async function dueDeliveries(store: DeliveryStore, now: number, limit: number): Promise<Delivery[]> {
  return store.records((await store.dueIds(now, null, limit)).map((mark) => mark.id))
}

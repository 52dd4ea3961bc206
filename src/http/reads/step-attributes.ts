import type { SpanAttributes } from '../../observe/tracing.js'

// The attributes of the report reads' steps (cache lookups, fills, hand-overs), made once
// and frozen: a span takes a frozen object as it is, its encoding made once
// (observe/recorded-span.ts), so a traced hit adds no attribute object of its own.

export const L1_HIT: SpanAttributes = Object.freeze({ 'gateway.cache.tier': 'l1', 'gateway.cache.result': 'hit' })
export const L1_MISS: SpanAttributes = Object.freeze({ 'gateway.cache.tier': 'l1', 'gateway.cache.result': 'miss' })
export const L2_HIT: SpanAttributes = Object.freeze({ 'gateway.cache.tier': 'l2', 'gateway.cache.result': 'hit' })
export const L2_NOT_FRESH: SpanAttributes = Object.freeze({ 'gateway.cache.tier': 'l2', 'gateway.cache.result': 'miss' })
export const JOINED_FILL: SpanAttributes = Object.freeze({ 'gateway.fill.source': 'joined' })
export const TO_ROUTER: SpanAttributes = Object.freeze({ 'gateway.handed_over': true })

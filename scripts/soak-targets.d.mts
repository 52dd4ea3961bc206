// Types of scripts/soak-targets.mjs, for the tests that pin it.

export interface Bucket {
  n: number
  errors: number
}
export interface Answer {
  status: number | null
  code: string | null
}
export interface Governor {
  seatsHeld?: number
  limit?: number | null
}
export function documentedCodes(contract: string): Record<string, string[]>
export const DOCUMENTED_CODES: Record<string, string[]>
export function classify(expect: readonly number[], answer: Answer): { error: boolean; undocumented: string | null }
export const RECOVERY_ALPHA: number
export function allowedErrors(n: number, baselineShare: number, alpha?: number): number
export interface SentAnswer {
  s: number
  error: string | null
  message?: string | null
}
export function baselineShare(answers: readonly SentAnswer[], ranges: readonly [number, number][]): { n: number; errors: number; share: number; upper: number }
export function secondsAfter(answers: readonly SentAnswer[], endS: number, untilS: number): (Bucket & { codes: Record<string, number> })[]
export function commonestErrors(answers: readonly SentAnswer[], fromS: number, untilS: number, k: number): string[]
export function recoveryAfter(answers: readonly SentAnswer[], endS: number, untilS: number, share: number, windowS: number): number
export function liveLeases(hash: Record<string, string>, now: number): number
export function sharedLimit(value: string | null | undefined): number | null
export function disagreement(redis: { live: number; liveAfter: number; limit: number | null }, replicas: readonly (Governor | null)[]): string | null
export interface MemorySample {
  rss: number
  newSpace?: number
}
export function rssWithin(first: MemorySample, last: MemorySample, share?: number): boolean
export function seededRandom(seed: number): () => number
export function shuffled<T>(items: readonly T[], random: () => number): T[]

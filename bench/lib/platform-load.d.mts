// Types of bench/lib/platform-load.mjs, for the tests that pin it.

export interface PlatformLoadWindow {
  inFlight: number
  meanInFlight: number
  peak: number
  overLimit: number | null
}
export function platformLoad(now: () => number): {
  readonly inFlight: number
  arrived(limit: number | null, taken: boolean): void
  ended(): void
  read(): PlatformLoadWindow
}

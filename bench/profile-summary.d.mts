// Types of bench/profile-summary.mjs, for the test that pins it.

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}
export function summarizeProfile(profile: CpuProfile, options?: { root?: string; top?: number; lastSeconds?: number | null; windows?: readonly (readonly [number, number])[] | null }): string

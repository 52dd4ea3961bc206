export const KNOWN_FAILURES: ReadonlyMap<number, readonly string[]> = new Map<number, readonly string[]>([])

// Types of scripts/floor-pattern.mjs, for its unit test.

export function wholeAtLeast(n: number): string
export function atLeastPattern(least: number, units: Readonly<Record<string, number>>): string

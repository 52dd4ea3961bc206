// Types of scripts/config-validators.mjs, for the test that holds the generated file to it.

export const GENERATED: URL
export function renderValidators(schema: { ConfigSchema: unknown; TeamsSchema: unknown }): string

// Types of scripts/chart-config-schema.mjs, for the chart test that holds values.schema.json to it.

export const VALUES_SCHEMA: URL
export function chartConfigSchema(configSchema: unknown, defaults: unknown, renamed: ReadonlyArray<[string[], string[]]>, retired: ReadonlyArray<[string[], string]>, floors: ReadonlyArray<{ path: readonly string[]; kind: string; least: number; written: string }>, units: Readonly<Record<string, Readonly<Record<string, number>>>>): unknown
export function withGatewayConfig(text: string, definition: unknown): string
export function currentDefinition(): Promise<unknown>

// Types of scripts/config-defaults.mjs, for the test that holds the generated file to it.

export const DEFAULTS_YAML: URL
export const GENERATED: URL
export function renderDefaults(text: string): string

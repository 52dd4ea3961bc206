// Types of scripts/image-env.mjs, for the tests that run the gateway as the image does.

export function imageMemoryEnv(path: string): Record<string, string>

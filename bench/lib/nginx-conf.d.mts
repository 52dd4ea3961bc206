// Types of bench/lib/nginx-conf.mjs, for the tests that start nginx.

export function nginxMain(dir: string): string
export function nginxTempPaths(dir: string): string

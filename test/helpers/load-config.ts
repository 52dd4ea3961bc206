import { readFileSync } from 'node:fs'
import { DEFAULT_CONFIG_PATH, loadConfig, type Config } from '../../src/config.js'

/**
 * loadConfig as main.ts runs it, on an environment and files held in memory (a
 * CONFIG_FILE, *_FILE secrets). Any other path is config/default.yaml from disk, or with
 * `disk` any file on disk; otherwise it is missing (ENOENT).
 */
export function loadConfigFrom(env: Record<string, string>, files: Record<string, string> = {}, opts: { disk?: boolean } = {}): Config {
  return loadConfig({
    env,
    readFile: (p) => {
      const inline = files[p]
      if (inline !== undefined) return inline
      if (opts.disk || p === DEFAULT_CONFIG_PATH) return readFileSync(p, 'utf8')
      throw Object.assign(new Error(`ENOENT: no such file in this test: ${p}`), { code: 'ENOENT' })
    },
  })
}

import { readFileSync } from 'node:fs'
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig, type Config } from '../../src/config.js'

/**
 * loadConfig as main.ts runs it, on an environment and files held in memory (a
 * CONFIG_FILE, *_FILE secrets). Any other path is config/default.yaml from disk, or with
 * `disk` any file on disk; otherwise it is missing (ENOENT). `memoryLimit`: the
 * container's, as process.constrainedMemory() would read it (default: this machine's).
 */
export function loadConfigFrom(env: Record<string, string>, files: Record<string, string> = {}, opts: { disk?: boolean; memoryLimit?: () => number } = {}): Config {
  return loadConfig({
    env,
    ...(opts.memoryLimit ? { memoryLimit: opts.memoryLimit } : {}),
    readFile: (p) => {
      const inline = files[p]
      if (inline !== undefined) return inline
      if (opts.disk || p === DEFAULT_CONFIG_PATH) return readFileSync(p, 'utf8')
      throw Object.assign(new Error(`ENOENT: no such file in this test: ${p}`), { code: 'ENOENT' })
    },
  })
}

const PLATFORM = { PLATFORM_BASE_URL: 'https://platform.example.com', PLATFORM_TOKEN: 'platform-token-abcdef123456' }
const CONFIG_PATH = '/virtual/config.yaml'

/** loadConfigFrom with a platform and `yaml` as CONFIG_FILE. */
export function loadConfigYaml(yaml: string): Config {
  return loadConfigFrom({ ...PLATFORM, CONFIG_FILE: CONFIG_PATH }, { [CONFIG_PATH]: yaml })
}

/** The problems the ConfigError of loadConfigYaml(yaml) lists; throws when the configuration loads. */
export function configProblems(yaml: string): string[] {
  try {
    loadConfigYaml(yaml)
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  throw new Error('expected a ConfigError, but the configuration loaded')
}

import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { afterEach } from 'vitest'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A file mounted as Kubernetes mounts a ConfigMap or a Secret: `config.yaml` (or `name`)
 * is a symlink to `..data/config.yaml`, and `..data` a symlink to a timestamped folder
 * that an update replaces by renaming a new `..data` over it (atomic), leaving the
 * file's own symlink unchanged.
 */
export class ConfigMapDir {
  readonly dir = mkdtempSync(join(tmpdir(), 'rgw-configmap-'))
  readonly path: string
  readonly #name: string
  #version = 0

  constructor(yaml: string, name = 'config.yaml') {
    this.#name = name
    this.path = join(this.dir, name)
    this.#swap(yaml)
    symlinkSync(`..data/${name}`, this.path)
  }

  /** The update as the kubelet makes it. */
  update(yaml: string): void {
    this.#swap(yaml)
  }

  #swap(yaml: string): void {
    const old = this.#version > 0 ? join(this.dir, `..v${this.#version}`) : null
    this.#version += 1
    const name = `..v${this.#version}`
    mkdirSync(join(this.dir, name))
    writeFileSync(join(this.dir, name, this.#name), yaml)
    symlinkSync(name, join(this.dir, '..data_tmp'))
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'))
    if (old) rmSync(old, { recursive: true, force: true })
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Makes ConfigMapDirs for a test file's tests, each removed after its test. */
export function useConfigMaps(): (yaml: string, name?: string) => ConfigMapDir {
  const dirs: ConfigMapDir[] = []
  afterEach(() => {
    for (const d of dirs.splice(0)) d.remove()
  })
  return (yaml, name) => {
    const dir = new ConfigMapDir(yaml, name)
    dirs.push(dir)
    return dir
  }
}

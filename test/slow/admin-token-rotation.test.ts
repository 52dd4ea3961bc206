import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { TEAMS_YAML } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// An admin token rotated across replicas whose mounted Secret changes one pod at a time,
// as kubelets sync it (about a minute apart), while a rolling restart replaces them
// (docs/operations/admin-calls.md, "Rotate an admin token"). Gateway processes
// (dist/main.js), each with a Secret folder of its own swapped as the kubelet swaps it
// (`..data`), and a caller that reaches them in turn, as the admin Service sends each
// connection to a pod. Written over `admin-token` at once, the new token is refused by
// the pods not yet synced and the old by those synced; given first under a name of its
// own in `admin-tokens`, no call is refused at any step.

const OLD = 'rotation-admin-token-old-0123456789ab'
const NEW = 'rotation-admin-token-new-0123456789ab'
const REPLICAS = 3

type Files = Record<string, string>

/** One pod's mount of the Secret: each file a symlink into `..data`, which an update swaps whole. */
class SecretMount {
  readonly dir = mkdtempSync(join(tmpdir(), 'rgw-admin-rotation-'))
  #version = 0

  constructor(files: Files) {
    this.sync(files)
    for (const name of Object.keys(files)) symlinkSync(`..data/${name}`, join(this.dir, name))
  }

  path(name: string): string {
    return join(this.dir, name)
  }

  /** The kubelet's update: the Secret's content now, in place at once. */
  sync(files: Files): void {
    const old = this.#version > 0 ? join(this.dir, `..v${this.#version}`) : null
    const version = `..v${++this.#version}`
    mkdirSync(join(this.dir, version))
    for (const [name, text] of Object.entries(files)) writeFileSync(join(this.dir, version, name), text)
    symlinkSync(version, join(this.dir, '..data_tmp'))
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'))
    if (old) rmSync(old, { recursive: true, force: true })
  }
}

interface Pod {
  gw: GatewayProcess
  mount: SecretMount
}

const hashLine = (name: string, token: string) => `${name}:sha256:${createHash('sha256').update(token).digest('hex')}\n`

describe('an admin token rotated while the Secret reaches the pods one at a time and they restart', () => {
  const sandbox = useSandbox()
  const pods: Pod[] = []
  const gone: Pod[] = []
  afterEach(async () => {
    for (const p of [...pods.splice(0), ...gone.splice(0)]) {
      await p.gw.close()
      rmSync(p.mount.dir, { recursive: true, force: true })
    }
  })

  it('refuses a caller on the pods not yet synced when written over admin-token at once; with the new token named first in admin-tokens, refuses none at any step', async () => {
    let secret: Files = { 'platform-token': `${sandbox.issueToken()}\n`, 'admin-token': `${OLD}\n`, 'admin-tokens': '# named admin tokens\n' }
    const start = async (): Promise<Pod> => {
      const mount = new SecretMount(secret)
      // As the chart sets them: the files of the mounted Secret, and a TEAMS_FILE-less CONFIG_FILE holding the teams.
      const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN_FILE: mount.path('platform-token'), ADMIN_TOKEN_FILE: mount.path('admin-token'), ADMIN_TOKENS_FILE: mount.path('admin-tokens'), LOG_LEVEL: 'info' }
      return { gw: await spawnGateway({ env, yaml: TEAMS_YAML }), mount }
    }
    for (let i = 0; i < REPLICAS; i++) pods.push(await start())

    // The admin Service sends each connection to one pod or another: a round of calls
    // reaches every pod with each token a caller may hold, the statuses in the pods' order.
    const whoami = async (pod: Pod, token: string) => {
      const res = await fetch(`${pod.gw.adminUrl}/admin/whoami`, { headers: { authorization: `Bearer ${token}`, connection: 'close' } })
      return res.status
    }
    const round = async (tokens: string[]) => {
      const seen: Record<string, number[]> = {}
      for (const token of tokens) seen[token === OLD ? 'old' : 'new'] = await Promise.all(pods.map((pod) => whoami(pod, token)))
      return seen
    }
    /** Syncs pod `i` with the Secret and waits until it took the file (its reload's audit line). */
    const syncPod = async (i: number, admins: string) => {
      const pod = pods[i] as Pod
      const before = pod.gw.output().split('\n').filter((l) => l.includes('new admin tokens in use')).length
      pod.mount.sync(secret)
      await waitFor(`pod ${i} to take ${admins}`, () => pod.gw.output().split('\n').filter((l) => l.includes('new admin tokens in use')).length > before, testTimeLeft(), 20)
    }
    /** Replaces pod `i` by one started from the Secret as it is now (a rollout's new pod). */
    const restart = async (i: number) => {
      const fresh = await start()
      const old = pods[i] as Pod
      pods[i] = fresh
      old.gw.kill('SIGTERM')
      expect((await old.gw.exited).code).toBe(0)
      gone.push(old)
    }

    // Written over admin-token at once: the first pod synced refuses the old token, the others the new.
    secret = { ...secret, 'admin-token': `${NEW}\n` }
    await syncPod(0, 'the new admin-token')
    expect(await round([OLD, NEW])).toEqual({ old: [401, 200, 200], new: [200, 401, 401] })
    // Back as it was, on that pod too.
    secret = { ...secret, 'admin-token': `${OLD}\n` }
    await syncPod(0, 'the old admin-token')
    expect(await round([OLD, NEW])).toEqual({ old: [200, 200, 200], new: [401, 401, 401] })

    // 1. The new token named first (admin-next): each pod takes it beside the old one as its
    //    Secret syncs; a pod restarted meanwhile starts with both.
    secret = { ...secret, 'admin-tokens': `# named admin tokens\n${hashLine('admin-next', NEW)}` }
    await syncPod(0, 'admin-next')
    expect((await round([OLD])).old).toEqual([200, 200, 200])
    await restart(1)
    expect((await round([OLD])).old).toEqual([200, 200, 200])
    await syncPod(2, 'admin-next')
    // 2. Every pod takes both: the callers switch.
    expect(await round([OLD, NEW])).toEqual({ old: [200, 200, 200], new: [200, 200, 200] })
    // 3. One change of the Secret: the new token in admin-token, the admin-next line gone.
    secret = { ...secret, 'admin-token': `${NEW}\n`, 'admin-tokens': '# named admin tokens\n' }
    await syncPod(2, 'the new admin-token')
    expect((await round([NEW])).new).toEqual([200, 200, 200])
    await restart(0)
    expect((await round([NEW])).new).toEqual([200, 200, 200])
    await syncPod(1, 'the new admin-token')
    expect(await round([OLD, NEW])).toEqual({ old: [401, 401, 401], new: [200, 200, 200] })

    // The reload's audit line names the tokens by fingerprint only; no token in any line.
    for (const pod of [...pods, ...gone]) for (const token of [OLD, NEW]) expect(pod.gw.output().includes(token)).toBe(false)
  }, startsTimeout(5))
})

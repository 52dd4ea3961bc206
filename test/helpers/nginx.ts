import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './start-redis.js'
import { freshRequest } from './balancers.js'
import { testTimeLeft, waitFor } from './wait.js'
import { nginxMain, nginxTempPaths } from '../../bench/lib/nginx-conf.mjs'

/** Whether an nginx binary is on PATH. */
export function hasNginx(): boolean {
  return spawnSync('nginx', ['-v'], { stdio: 'ignore' }).status === 0
}

/**
 * nginx in front of replicas as an ingress runs it: one upstream of their loopback
 * ports, kept-alive connections to them, and no retry (`proxy_next_upstream off`: a
 * request whose replica fails is the caller's 502). Each answer names the replica it
 * came from in `x-upstream` (`$upstream_addr`, failures included).
 */
export interface Nginx {
  url: string
  /** Writes the configuration with these upstream ports and reloads it (SIGHUP to the master). */
  setUpstreams(ports: number[]): void
  /** What nginx logged (warnings and errors). */
  errors(): string
  close(): Promise<void>
}

function conf(dir: string, port: number, upstreams: number[]): string {
  return `${nginxMain(dir)}
daemon off;
worker_processes 1;
events { worker_connections 1024; }
http {
  access_log off;
${nginxTempPaths(dir)}
  upstream gateways {
${upstreams.map((p) => `    server 127.0.0.1:${p};`).join('\n')}
    keepalive 16;
  }
  server {
    listen 127.0.0.1:${port};
    location = /nginx-up { return 200 "up\\n"; }
    location / {
      proxy_pass http://gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_next_upstream off;
      add_header x-upstream $upstream_addr always;
    }
  }
}
`
}

/** Starts nginx on a free loopback port in front of `upstreams`; resolves once it answers. */
export async function startNginx(upstreams: number[]): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-nginx-'))
  mkdirSync(join(dir, 'tmp'))
  const port = await freePort()
  const file = join(dir, 'nginx.conf')
  writeFileSync(file, conf(dir, port, upstreams))
  const child: ChildProcess = spawn('nginx', ['-p', dir, '-c', file, '-e', join(dir, 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const errors = () => {
    let log = ''
    try {
      log = readFileSync(join(dir, 'error.log'), 'utf8')
    } catch {
      // not written yet
    }
    return `${stderr}${log}`.slice(-20_000)
  }
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
    rmSync(dir, { recursive: true, force: true })
  }
  const url = `http://127.0.0.1:${port}`
  try {
    await waitFor(() => `nginx to answer on ${url}:\n${errors()}`, async () => child.exitCode === null && (await freshRequest(`${url}/nginx-up`)).status === 200, testTimeLeft(), 50)
  } catch (err) {
    await close()
    throw err
  }
  return {
    url,
    setUpstreams(ports) {
      writeFileSync(file, conf(dir, port, ports))
      child.kill('SIGHUP')
    },
    errors,
    close,
  }
}

// nginx proxy_cache in front of an origin, the reference the gateway is compared with.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../../scripts/free-port.mjs'
import { nginxMain, nginxTempPaths } from './nginx-conf.mjs'
import { waitForHttp } from './http.mjs'
import { SERVER_CORE, launch, pin, stopProcess, tmp } from './processes.mjs'

/**
 * Starts nginx (one worker, on the server core) caching /api/v1/ from `origin` with the
 * platform token set. `valid`: proxy_cache_valid for 200s; `updating`: serve the stale
 * copy while one background request refreshes it (proxy_cache_use_stale updating +
 * proxy_cache_background_update), as a dashboard-friendly nginx would be set up.
 * `updating` alone serves a copy stale however old it is (up to `inactive=10m`);
 * `staleS` (with `updating`) serves it stale for that many seconds past its validity
 * and no longer, as the gateway's `staleWhileRevalidate`: nginx takes a stale window
 * only from the origin's `Cache-Control: stale-while-revalidate`, so the cache's
 * location then proxies through a second server of the same nginx that adds that
 * header to the origin's answers (the origin, shared with the gateway, is unchanged).
 */
export async function startNginx({ origin, platformToken, name = 'nginx', valid = '5m', updating = false, staleS = null }) {
  const dir = join(tmp, name)
  for (const sub of ['', 'cache', 'tmp', 'logs']) mkdirSync(join(dir, sub), { recursive: true })
  const port = await freePort()
  const windowed = updating && staleS !== null
  let hopPort = null
  while (windowed && (hopPort === null || hopPort === port)) hopPort = await freePort()
  const upstream = windowed
    ? `  upstream platform {
    server 127.0.0.1:${hopPort};
    keepalive 32;
  }
  upstream origin {
    server ${origin.replace('http://', '')};
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${hopPort};
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_hide_header Cache-Control;
      add_header Cache-Control "stale-while-revalidate=${staleS}" always;
    }
  }`
    : `  upstream platform {
    server ${origin.replace('http://', '')};
    keepalive 32;
  }`
  // Windowed, `updating` is left out of use_stale (it would serve any age) and the
  // origin's Cache-Control is read for its stale window; proxy_cache_valid still sets the
  // validity, as the header has no max-age.
  const stale = !updating
    ? ''
    : windowed
      ? '      proxy_cache_use_stale error timeout http_500 http_502 http_503 http_504;\n      proxy_cache_background_update on;\n'
      : '      proxy_cache_use_stale updating error timeout http_500 http_502 http_503 http_504;\n      proxy_cache_background_update on;\n'
  const ignored = windowed ? 'Set-Cookie Expires Vary' : 'Set-Cookie Cache-Control Expires Vary'
  const conf = `${nginxMain(dir)}
worker_processes 1;
events { worker_connections 4096; }
http {
  access_log off;
${nginxTempPaths(dir)}
  keepalive_requests 10000000;
  keepalive_timeout 65s;
  proxy_cache_path ${dir}/cache levels=1:2 keys_zone=reports:10m max_size=256m inactive=10m use_temp_path=off;
${upstream}
  server {
    listen 127.0.0.1:${port};
    location = /healthz { return 200 "ok\\n"; }
    location /api/v1/ {
      proxy_pass http://platform;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer ${platformToken}";
      proxy_set_header X-Api-Key "";
      proxy_set_header Cookie "";
      proxy_set_header Accept-Encoding "gzip";
      proxy_cache reports;
      proxy_cache_valid 200 ${valid};
      proxy_cache_lock on;
      proxy_cache_lock_timeout 10s;
      proxy_cache_lock_age 10s;
${stale}      proxy_ignore_headers ${ignored};
      proxy_hide_header Set-Cookie;
      add_header X-Cache-Status $upstream_cache_status;
    }
  }
}
`
  writeFileSync(join(dir, 'nginx.conf'), conf)
  const [cmd, args] = pin(SERVER_CORE, 'nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;'])
  const p = await launch(name, cmd, args)
  const url = `http://127.0.0.1:${port}`
  try {
    await waitForHttp(`${url}/healthz`, 5000)
  } catch (err) {
    let errors = ''
    try {
      errors = readFileSync(join(dir, 'error.log'), 'utf8').slice(-500)
    } catch {
      // no error log
    }
    await stopProcess(p)
    throw new Error(`nginx did not start: ${err.message} ${errors}`)
  }
  return { ...p, url, pid: p.child.pid }
}

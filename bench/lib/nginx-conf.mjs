// The lines every nginx of ours starts its configuration with: run as the user who owns
// the folder `dir` (as root the workers would run as nobody, who cannot read it), its pid
// and error log there, and every temporary path under `dir`/tmp.

import { userInfo } from 'node:os'

/** The main context's lines (user, pid, error log). */
export function nginxMain(dir) {
  const user = process.getuid?.() === 0 ? `user ${userInfo().username};\n` : ''
  return `${user}pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;`
}

/** The http context's temporary paths. */
export function nginxTempPaths(dir) {
  const paths = { client_body_temp_path: 'body', proxy_temp_path: 'proxy', fastcgi_temp_path: 'fastcgi', uwsgi_temp_path: 'uwsgi', scgi_temp_path: 'scgi' }
  return Object.entries(paths).map(([name, sub]) => `  ${name} ${dir}/tmp/${sub};`).join('\n')
}

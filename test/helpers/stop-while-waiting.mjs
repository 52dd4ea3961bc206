// Run as `node stop-while-waiting.mjs <pid> <ms>`: stops the process <pid> (SIGSTOP) at a
// moment its main thread waits in epoll for an event with a timeout (the wait libuv counts
// as the loop's idle time), keeps it stopped <ms>, then lets it go on (SIGCONT). A stop
// that finds the thread anywhere else (running JavaScript, or libuv's poll without a wait)
// is let go at once and tried again a few milliseconds later: only a stop inside the wait
// is a machine that gives an idle loop no core. Linux only (/proc/<pid>/syscall).
// Exits 3 if no stop found the thread waiting within its tries.
import { readFileSync } from 'node:fs'
import { arch } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'

const [pid, holdMs] = process.argv.slice(2).map(Number)
// epoll_wait and epoll_pwait (timeout is the 4th argument of both); arm64 has only epoll_pwait.
const EPOLL_WAITS = { x64: [232, 281], arm64: [22] }[arch()] ?? []
const stateOf = () => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0]

for (let tries = 0; tries < 500; tries++) {
  process.kill(pid, 'SIGSTOP')
  while (stateOf() !== 'T') await sleep(1)
  const [nr, , , , timeout] = readFileSync(`/proc/${pid}/syscall`, 'utf8').trim().split(' ')
  if (EPOLL_WAITS.includes(Number(nr)) && BigInt(timeout) !== 0n) {
    await sleep(holdMs)
    process.kill(pid, 'SIGCONT')
    process.exit(0)
  }
  process.kill(pid, 'SIGCONT')
  await sleep(1 + Math.random() * 5)
}
process.exit(3)

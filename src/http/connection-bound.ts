import { readFileSync } from 'node:fs'

// How many connections a listener holds at once (`server.maxConnections`). Each is a file
// descriptor of the process, and past the process's open-file limit it can open nothing:
// every new caller's connection is reset (another team's, the load balancer's health
// check, the admin listener's), and so is every connection and file the gateway itself
// opens (the platform, Redis, a teams file). Unset, a listener's bound is half of what the
// open-file limit leaves once a part is kept for the gateway's own use: both listeners at
// their bounds still leave it that part.

/** The descriptors kept for the gateway's own connections and files: a quarter of the limit, at most 512. */
export function reservedFiles(fileLimit: number): number {
  return Math.min(512, Math.floor(fileLimit / 4))
}

/** The soft open-file limit in the text of `/proc/<pid>/limits`; null when it states none (or `unlimited`). */
export function openFileLimit(limits: string): number | null {
  const match = /^Max open files\s+(\d+)\s/m.exec(limits)
  return match === null ? null : Number(match[1])
}

/** A listener's connection bound: `setting` when set, else half of what `fileLimit` leaves past reservedFiles; null: no bound. */
export function connectionBound(setting: number | null, fileLimit: number | null): number | null {
  if (setting !== null) return setting
  if (fileLimit === null) return null
  return Math.max(1, Math.floor((fileLimit - reservedFiles(fileLimit)) / 2))
}

/** This process's open-file limit (Node raises the soft limit to the hard one as it starts); null where the system does not say (not Linux). */
export function processFileLimit(): number | null {
  try {
    return openFileLimit(readFileSync('/proc/self/limits', 'utf8'))
  } catch {
    return null
  }
}

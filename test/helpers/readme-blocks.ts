import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The lines of the README's sh block that starts with `start`, line continuations joined, trimmed, blank lines left out. */
export function readmeShLines(start: string): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.startsWith(start))
  if (!block) throw new Error(`README.md has no sh block starting with ${start}`)
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
}

/** The text of the fenced `lang` block of `file` (a path from the repository's root) whose first line starts with `start`. */
export function docBlock(file: string, lang: string, start: string): string {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const block = [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]!).find((b) => b.startsWith(start))
  if (!block) throw new Error(`${file} has no ${lang} block starting with ${start}`)
  return block
}

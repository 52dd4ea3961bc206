/**
 * Work cut in pieces: a generator that yields between two pieces, so that whoever runs it
 * says when the next one runs (a large request body's check, each piece in a turn of its
 * team's on the event loop: access/admission.ts); it returns what the work found, or
 * throws from the piece that refuses.
 */
export type Pieces<T> = Generator<void, T>

/** What `work` returns, its pieces run at once. */
export function finished<T>(work: Pieces<T>): T {
  for (;;) {
    const step = work.next()
    if (step.done === true) return step.value
  }
}

/** What `work` returns, each of its pieces (the first too) run once `turn()` has resolved. */
export async function inTurns<T>(work: Pieces<T>, turn: () => Promise<unknown>): Promise<T> {
  for (;;) {
    await turn()
    const step = work.next()
    if (step.done === true) return step.value
  }
}

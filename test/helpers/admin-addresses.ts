// The admin listener refuses an address 429 once it sent too many refused tokens
// (src/access/admin-guesses.ts). A test that sends many wrong tokens for another purpose
// (the 401 of every call, a token polled for until a reload takes it) sends each from an
// address of its own, so that what it tests is not that bound.

// From 127.0.1.0 on: 127.0.0.1, inject's own, is never one of them.
let next = 255

/** A loopback address no call of this test process used before (inject's `remoteAddress`). */
export function freshAddress(): string {
  next += 1
  return `127.${(next >> 16) & 255}.${(next >> 8) & 255}.${next & 255}`
}

// Ajv's `code` option for every validator the gateway compiles (Fastify's routes), and for
// the config's, generated ahead of time with it (scripts/config-validators.mjs).
//
// Ajv's code optimizer builds a `{ [name]: 1 }` object for every variable name it
// generates (`err57`, `_errs51`, `valid8`...), over a thousand for the config schema. V8
// records each distinct first property as a transition of the one hidden class that every
// `{}` starts from, and that class takes at most 1,536. While it is full, every object the
// process builds from `{}` or with a computed first key gets a hidden class of its own,
// and the inline caches that see them go megamorphic for good. `process.nextTick` builds
// its queue entries that way, seven per hit: measured on the landed gateway, a call cost
// 5 to 8 times a bare server's (0.5 to 0.9 µs against 0.1), a tenth of a hit's time.
// Unoptimized validators check exactly the same; the code they run keeps a few unused
// assignments.
export const VALIDATOR_CODE = { optimize: false } as const

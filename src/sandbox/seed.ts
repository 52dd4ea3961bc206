// The seed of the sandbox's generated data when none is given: in a module of its own,
// so the command line's usage names it without loading the server.
export const DEFAULT_SANDBOX_SEED = 42

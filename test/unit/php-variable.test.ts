import { describe, expect, it } from 'vitest'
import { phpVariable } from '../../src/access/request-target.js'
import { phpName } from '../../src/sandbox/php-input.js'

// The gateway's reading of the variable a query or form name fills (access/request-target.ts)
// is PHP's, as the sandbox models it (sandbox/php-input.ts): a name the scope check reads as
// one variable is that variable to the platform.

describe('phpVariable', () => {
  it.each([
    ['userId', 'userId'],
    ['userId[]', 'userId'],
    ['userId[0]', 'userId'],
    ['userId[]x', 'userId'],
    ['filter[userId][]', 'filter'],
    ['user.id', 'user_id'],
    ['.method[x]', '_method'],
    // A `[` no `]` follows is `_`, and so are the dots and `[` after it.
    ['user[id', 'user_id'],
    ['advertiser[id', 'advertiser_id'],
    ['userId[', 'userId_'],
    ['a.b[c.d[e', 'a_b_c_d_e'],
    ['a[b[c]', 'a'],
    // Leading spaces are dropped before anything else (php_variables.c php_register_variable_ex).
    [' _method', '_method'],
    ['   _method[]', '_method'],
    [' .method', '_method'],
    ['  user id', 'user_id'],
  ])('%s is %s, as PHP stores it', (name, variable) => {
    expect(phpVariable(name)).toBe(variable)
    expect(phpName(name)?.base).toBe(variable)
  })
})

import type { SandboxAccount, SandboxCredentials } from './types.js'

// Two account trees: the demo credential's parent (100) with its children, and a
// second customer (200) whose data the demo credential must never see.

export const MAIN_PARENT_ID = 100

export const SANDBOX_ACCOUNTS: readonly SandboxAccount[] = [
  { id: 100, name: 'Acme Media Group', parentId: null, currency: 'USD' },
  { id: 101, name: 'Acme Kenya', parentId: 100, currency: 'KES' },
  { id: 102, name: 'Acme Nigeria', parentId: 100, currency: 'NGN' },
  { id: 103, name: 'Acme Europe', parentId: 100, currency: 'EUR' },
  { id: 200, name: 'Northwind Holdings', parentId: null, currency: 'USD' },
  { id: 201, name: 'Northwind South Africa', parentId: 200, currency: 'ZAR' },
]

/** Where each account's campaigns run; the platform fills `country` from it. */
export const HOME_COUNTRY: Readonly<Record<number, string>> = {
  100: 'US', 101: 'KE', 102: 'NG', 103: 'LT', 200: 'GB', 201: 'ZA',
}

/** Local currency units per US dollar: fixed, so local-currency reports stay deterministic. */
export const UNITS_PER_USD: Readonly<Record<string, number>> = {
  USD: 1, EUR: 0.92, KES: 129.3, NGN: 1540, ZAR: 18.25,
}

/** Fixed rather than random so that demo mode, docs and scripts can name them. */
export const DEMO_CREDENTIALS: SandboxCredentials = {
  username: 'demo@sandbox.local',
  password: 'sandbox-demo-password',
  clientId: 2,
  clientSecret: 'sandbox-demo-client-secret',
}

/** A parent's token reads its own account and its children's, nothing else. */
export function mayRead(tokenAccountId: number, target: SandboxAccount | undefined): boolean {
  return target !== undefined && (target.id === tokenAccountId || target.parentId === tokenAccountId)
}

import type { Config } from '../../config.js'
import type { SharedToken, TokenProvider, TokenProviderDeps } from './token-provider.js'
import { TokenProvider as Provider } from './token-provider.js'
import { UnknownCredentialError } from '../../errors.js'

/** The token providers of every configured credential, by name. */
export class TokenRegistry {
  readonly #providers = new Map<string, TokenProvider>()

  constructor(config: Config, deps: TokenProviderDeps) {
    for (const credential of Object.values(config.credentials)) {
      this.#providers.set(credential.name, new Provider(credential, deps))
    }
  }

  get(name: string): TokenProvider {
    const provider = this.#providers.get(name)
    if (!provider) throw new UnknownCredentialError()
    return provider
  }

  all(): TokenProvider[] {
    return [...this.#providers.values()]
  }

  /**
   * Starts every provider; `shared`: the tokens stored in Redis at start, by credential
   * (TokenStore.storedAtStart); `stored` reads a credential's again (TokenStore.stored).
   */
  async start(shared: Map<string, SharedToken> = new Map(), stored?: (credential: string) => Promise<SharedToken | null>): Promise<void> {
    await Promise.all(this.all().map((p) => p.start(shared.get(p.name) ?? null, stored && (() => stored(p.name)))))
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((p) => p.close()))
  }
}

import { credentialPrefix } from './names.js'

// A platform login's password and client secret are chosen on the platform's side, often by a
// person: one such as `Summer2026` is a word a team may write (a campaign's name) without
// knowing it is the password. Requests are searched for the gateway's secrets, and a hit is
// refused and suspends its team (decisions/secret-guesses.md); for a short login secret the
// hit can come by chance, and each refusal tells a guesser with a key that its text held the
// password. Such a secret is left out of that search: a request holding it goes on as any
// other, and no answer depends on it. The log still scrubs it by value.

/** The fewest characters of a login's password or client secret that requests are searched for. */
export const SEARCHED_LOGIN_SECRET_CHARS = 20

/** Whether requests are searched for `value`, a login's password or client secret: it is long enough that no team writes it by chance. */
export function searchedLoginSecret(value: string): boolean {
  return value.length >= SEARCHED_LOGIN_SECRET_CHARS
}

/** A credential's login, as the start reads it: its name and its password and client secret, if it logs in. */
export interface CredentialLogin {
  name: string
  login: { password: string; clientSecret: string } | null
}

/**
 * The start's warning for each login password and client secret that requests are not
 * searched for (searchedLoginSecret): it names the setting and its variable, never the value,
 * and says what a request holding it meets, and what a longer one would do.
 */
export function shortLoginSecretWarnings(credentials: readonly CredentialLogin[]): string[] {
  const warnings: string[] = []
  for (const { name, login } of credentials) {
    if (login === null) continue
    for (const [field, suffix, value] of [['password', 'PASSWORD', login.password], ['clientSecret', 'CLIENT_SECRET', login.clientSecret]] as const) {
      if (searchedLoginSecret(value)) continue
      const setting = name === 'default' ? `platform.${field} (PLATFORM_${suffix})` : `credentials.${name}.${field} (${credentialPrefix(name)}${suffix})`
      warnings.push(
        `${setting} is shorter than ${SEARCHED_LOGIN_SECRET_CHARS} characters: a team may write it in ordinary text (a campaign's name) without knowing it, so requests are not searched for it; one that holds it is sent to the platform as any other, its team neither refused nor suspended (the log writes it [REDACTED]); set one of ${SEARCHED_LOGIN_SECRET_CHARS} characters or more on the platform, drawn at random, to have a request holding it refused and its team suspended (limits.secretSuspension)`,
      )
    }
  }
  return warnings
}

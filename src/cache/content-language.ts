// RFC 9110, 8.5: `Content-Language = #language-tag`; a tag (BCP 47) is letters, digits and hyphens.
const LANGUAGE_TAGS = /^[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*(?:[ \t]*,[ \t]*[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*)*$/
// A platform says one language, or a few: a longer list is none it means.
const MAX_LENGTH = 256

/**
 * The `content-language` a report copy keeps and says: `value` when it is a list of
 * language tags, else undefined. Both what a fill keeps from the platform and what a
 * copy read from Redis says pass here, so the two tiers say the same.
 */
export function contentLanguage(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= MAX_LENGTH && LANGUAGE_TAGS.test(value) ? value : undefined
}

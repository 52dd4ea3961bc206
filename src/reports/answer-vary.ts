// The platform's `Vary` on a report answer names the request headers the answer was
// chosen by (RFC 9110, 12.5.5); a cache reuses a stored answer only for a request that
// matches the one it answered on each of them, and never when `Vary` is `*` (RFC 9111, 4.1).
// The requests the report cache answers from a copy are the gateway's own fills of that
// copy's key, and every fill of a key sends the same headers but for the call's own:
// `accept`, `accept-encoding` and `content-type` are the gateway's fixed ones, the token in
// `authorization` is the credential's (which the key holds), and no header of the caller is
// sent (report-fetcher.ts): a header the fills do not send is absent from each alike, so an
// answer varying on `accept-language`, `origin` or `cookie` matches every later fill. What
// differs from fill to fill is the call's id and trace context: an answer that varies on
// one of them, or on `*`, answers that one call only.

// Headers the gateway sets anew on each platform call (platform-client.ts, tracing.ts).
const PER_CALL = new Set(['x-request-id', 'traceparent'])

/** Whether an answer with this `vary` may be kept as its report's copy: no `*`, and no header that differs from fill to fill. */
export function varyAllowsSharing(vary: string | readonly string[] | undefined): boolean {
  if (vary === undefined) return true
  const names = (typeof vary === 'string' ? vary : vary.join(',')).split(',').map((name) => name.trim().toLowerCase())
  return !names.some((name) => name === '*' || PER_CALL.has(name))
}

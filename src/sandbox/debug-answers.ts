// Laravel's answer to an exception with APP_DEBUG=true, to a request that expects JSON
// (Illuminate\Foundation\Exceptions\Handler::convertExceptionToArray): beside `message`,
// the exception's class, the file and line it was thrown at, and its trace, each frame's
// file, line, function, class and type (its arguments left out). An HTTP exception (a 404,
// 403, 405, 429) and any other (a 500) carry them; an authentication failure (401) and a
// failed validation (422) have answers of their own, without them.

const ROOT = '/var/www/platform'

const EXCEPTIONS: Record<number, string> = {
  403: 'Symfony\\Component\\HttpKernel\\Exception\\AccessDeniedHttpException',
  404: 'Symfony\\Component\\HttpKernel\\Exception\\NotFoundHttpException',
  405: 'Symfony\\Component\\HttpKernel\\Exception\\MethodNotAllowedHttpException',
  429: 'Illuminate\\Http\\Exceptions\\ThrottleRequestsException',
}
const HTTP_EXCEPTION = 'Symfony\\Component\\HttpKernel\\Exception\\HttpException'
const SERVER_EXCEPTION = 'ErrorException'

const TRACE = [
  { file: `${ROOT}/vendor/laravel/framework/src/Illuminate/Routing/AbstractRouteCollection.php`, line: 45, function: 'handleMatchedRoute', class: 'Illuminate\\Routing\\AbstractRouteCollection', type: '->' },
  { file: `${ROOT}/vendor/laravel/framework/src/Illuminate/Routing/Router.php`, line: 763, function: 'findRoute', class: 'Illuminate\\Routing\\Router', type: '->' },
  { file: `${ROOT}/app/Http/Controllers/Api/V1/ReportController.php`, line: 58, function: 'dispatch', class: 'Illuminate\\Routing\\Router', type: '->' },
  { file: `${ROOT}/public/index.php`, line: 52, function: 'handle', class: 'Illuminate\\Foundation\\Http\\Kernel', type: '->' },
]

/** `payload` (a JSON answer with `status`) as a Laravel app in debug mode writes it: unchanged where it carries no debug fields. */
export function withDebugFields(status: number, payload: Buffer): Buffer {
  if (status < 400 || status === 401 || status === 422) return payload
  let body: unknown
  try {
    body = JSON.parse(payload.toString('utf8'))
  } catch {
    return payload
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body) || 'exception' in body) return payload
  const exception = EXCEPTIONS[status] ?? (status >= 500 ? SERVER_EXCEPTION : HTTP_EXCEPTION)
  return Buffer.from(JSON.stringify({ ...body, exception, file: TRACE[0]?.file, line: TRACE[0]?.line, trace: TRACE }))
}

// Each header of Debugbar's data holds this many characters at most (php-debugbar's
// DebugBar::getDataAsHeaders, `$maxHeaderLength`).
const DEBUGBAR_HEADER_LENGTH = 4096

/** PHP's rawurlencode: every byte but letters, digits and `-_.~` as `%XX`. */
function rawurlencode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

/**
 * Laravel Debugbar (barryvdh/laravel-debugbar, on whenever APP_DEBUG is, its `capture_ajax`
 * default on) with its storage off, on an answer to a request that wants JSON: what it
 * collected, rawurlencoded JSON, in headers of DEBUGBAR_HEADER_LENGTH characters,
 * `phpdebugbar`, then `phpdebugbar-1`, `phpdebugbar-2`, … (php-debugbar's
 * DebugBar::sendDataInHeaders). Its collectors here: PHP's version, the route and its
 * controller's file, and each query with its bindings and connection; the request's own
 * headers are not collected (`symfony_request` off).
 */
export function debugbarHeaders(id: string, method: string, path: string): Record<string, string> {
  const query = { sql: 'select * from `campaigns` where `user_id` = ? and `deleted_at` is null', bindings: [101], duration: 0.71, connection: 'mysql', database: 'platform_prod' }
  const data = {
    php: { version: '8.3.14', interface: 'fpm-fcgi' },
    route: { uri: `${method} ${path}`, controller: 'App\\Http\\Controllers\\Api\\V1\\CampaignController@index', file: `${ROOT}/app/Http/Controllers/Api/V1/CampaignController.php:41-77` },
    queries: { nb_statements: 40, statements: Array.from({ length: 40 }, () => query) },
  }
  const encoded = rawurlencode(JSON.stringify({ id, data }))
  const headers: Record<string, string> = {}
  for (let at = 0, i = 0; at < encoded.length; at += DEBUGBAR_HEADER_LENGTH, i++) headers[i === 0 ? 'phpdebugbar' : `phpdebugbar-${i}`] = encoded.slice(at, at + DEBUGBAR_HEADER_LENGTH)
  return headers
}

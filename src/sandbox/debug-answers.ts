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

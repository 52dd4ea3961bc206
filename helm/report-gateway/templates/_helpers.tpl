{{/*
Named templates of the chart. Kept to a small subset of Go templates and Sprig
(include, default, trunc, trimSuffix, printf, replace, contains, toYaml, quote, nindent,
int, add, join, deepCopy, set, unset, required, fail, .Files.Get) so
test/helpers/render-chart.ts can render the chart where no helm binary exists.
*/}}

{{/* The chart's name, or nameOverride. */}}
{{- define "report-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's resources: fullnameOverride, else <release>-<name>, else the
release name alone when it already contains the name. 63 characters: the DNS label limit.
*/}}
{{- define "report-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart name and version for the helm.sh/chart label. */}}
{{- define "report-gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "report-gateway.labels" -}}
helm.sh/chart: {{ include "report-gateway.chart" . }}
{{ include "report-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: report-gateway
{{- end }}

{{/* Labels that select the gateway's pods (immutable in a Deployment: never add to them). */}}
{{- define "report-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "report-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "report-gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "report-gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret mounted at secrets.mountPath. */}}
{{- define "report-gateway.secretName" -}}
{{- default (include "report-gateway.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/*
Image reference: repository@digest, else repository:tag (tag defaults to appVersion).
The chart names no registry of its own: a placeholder default would deploy as it is
and fail at the image pull, far from the value to set. An all-digit tag reaches here
as a number (int64 from --set, float64 from a values file, which %v would print as
2.0261201e+07): written back with %d, as given.
*/}}
{{- define "report-gateway.image" -}}
{{- $repository := required "image.repository is required: the gateway's image in your registry, built from the repository's Dockerfile (--set image.repository=<registry>/report-gateway)" .Values.image.repository }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repository .Values.image.digest }}
{{- else }}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if not (kindIs "string" $tag) }}
{{- $tag = printf "%d" (int $tag) }}
{{- end }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{/*
Content of the CONFIG_FILE: the settings, never the teams (they are TEAMS_FILE, in a
Secret of their own). One definition for the ConfigMap and for the pod's
checksum/config annotation, so a change of `config` rolls the pods and a change of
`teams` does not. Teams left under `config` (where they went before) are refused, with
where they go now: rendered into the settings they would roll the pods, and the gateway
refuses teams declared in both files.
*/}}
{{- define "report-gateway.settingsFile" -}}
{{- if .Values.config.teams }}
{{- fail "config.teams: the teams are no longer part of the config file; move them to the top-level value `teams` (TEAMS_FILE, a Secret of their own that the pods re-read without a restart)" }}
{{- end }}
{{- include "report-gateway.checkTimeouts" .Values.config }}
{{- include "report-gateway.checkRedis" . }}
{{- include "report-gateway.checkConfigBesideEnv" . }}
{{- $config := deepCopy .Values.config }}
{{- $_ := unset $config "teams" }}
{{- /* shutdownDrain and shutdownGrace come from values.shutdownDrainSeconds and values.shutdownGraceSeconds, which terminationGracePeriodSeconds is derived from. */ -}}
{{- $_ := set $config "shutdownDrain" (printf "%ds" (int .Values.shutdownDrainSeconds)) }}
{{- $_ := set $config "shutdownGrace" (printf "%ds" (int .Values.shutdownGraceSeconds)) }}
{{- /* Without Redis the report jobs' results stay in the pod's memory: every team's together within 64MiB (jobs.resultsRoom), beside the cache and the answers in the memory limit, unless `config` sets it (null included: jobs.resultBytesPerTeam alone bounds them). */ -}}
{{- if not (include "report-gateway.usesRedis" .) }}
{{- $jobs := default (dict) $config.jobs }}
{{- if not (hasKey $jobs "resultsRoom") }}
{{- $_ := set $jobs "resultsRoom" "64MiB" }}
{{- $_ := set $config "jobs" $jobs }}
{{- end }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/*
The gateway stops at start (exit 78) unless server.connectionTimeout is longer than
platform.timeout (an idle caller connection outlasts the longest platform call): refused
here with its message. Each value not set is the gateway's default (config/default.yaml).
*/}}
{{- define "report-gateway.checkTimeouts" -}}
{{- $ms := dict "connection" 0 "timeout" 0 }}
{{- $connection := "2m" }}
{{- $timeout := "30s" }}
{{- with .server }}{{ with .connectionTimeout }}{{ $connection = . }}{{ end }}{{ end }}
{{- with .platform }}{{ with .timeout }}{{ $timeout = . }}{{ end }}{{ end }}
{{- include "report-gateway.durationMs" (dict "value" $connection "into" $ms "key" "connection") }}
{{- include "report-gateway.durationMs" (dict "value" $timeout "into" $ms "key" "timeout") }}
{{- if not (gt $ms.connection $ms.timeout) }}
{{- fail (printf "server.connectionTimeout: must be longer than platform.timeout (%v) (values config.server.connectionTimeout, default 2m, and config.platform.timeout, default 30s): every pod would stop at start with this message (exit 78)" $timeout) }}
{{- end }}
{{- end }}

{{/*
Redis settings with which the gateway stops at start (exit 78, src/config/normalize.ts):
refused here with its message, where the values hold what it reads. Sentinels and a
Cluster together; the Sentinels' TLS or password without Sentinels; on a Cluster, a
database other than 0 or a key prefix holding "{"; TLS settings (redis.tlsServername,
redis.sentinelTls) while REDIS_URL is not rediss://. A REDIS_URL from redis.existingSecret
is not known here: what depends on it is left to the gateway.
*/}}
{{- define "report-gateway.checkRedis" -}}
{{- $redis := default (dict) .Values.config.redis }}
{{- $tail := "every pod would stop at start with this message (exit 78)" }}
{{- if and $redis.sentinels $redis.cluster }}
{{- fail (printf "config.redis: set sentinels or cluster, not both: %s" $tail) }}
{{- end }}
{{- if and $redis.sentinelTls (not $redis.sentinels) }}
{{- fail (printf "config.redis.sentinelTls: set, but no Sentinels are: set redis.sentinels (with redis.sentinelName), or remove redis.sentinelTls: %s" $tail) }}
{{- end }}
{{- if and .Values.secrets.keys.redisSentinelPassword (not $redis.sentinels) }}
{{- fail (printf "secrets.keys.redisSentinelPassword: REDIS_SENTINEL_PASSWORD: set, but no Sentinels are: set redis.sentinels (with redis.sentinelName), or remove REDIS_SENTINEL_PASSWORD: %s; set config.redis.sentinels, or empty secrets.keys.redisSentinelPassword" $tail) }}
{{- end }}
{{- if and $redis.cluster (kindIs "string" $redis.keyPrefix) (contains "{" (default "" $redis.keyPrefix)) }}
{{- fail (printf "config.redis.keyPrefix: holds a brace, but a Redis Cluster hashes a key by the part of it between braces: remove them: %s" $tail) }}
{{- end }}
{{- if not .Values.redis.existingSecret.name }}
{{- $url := .Values.redis.url | default $redis.url | default "" }}
{{- if and $redis.cluster (regexMatch "^rediss?://[^/]*/0*[1-9][0-9]*$" $url) }}
{{- fail (printf "redis.url: names a database other than 0, but a Redis Cluster has database 0 alone: remove it from the URL, or give this installation its own config.redis.keyPrefix: %s" $tail) }}
{{- end }}
{{- if not (regexMatch "^rediss://" $url) }}
{{- if $redis.tlsServername }}
{{- fail (printf "config.redis.tlsServername: set, but Redis is not reached over TLS: set REDIS_URL (redis.url) to a rediss:// URL, or remove redis.tlsServername: %s" $tail) }}
{{- end }}
{{- if $redis.sentinelTls }}
{{- fail (printf "config.redis.sentinelTls: set, but Redis is not reached over TLS: set REDIS_URL (redis.url) to a rediss:// URL, or remove redis.sentinelTls: %s" $tail) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A duration of the gateway's config in ms, as the gateway reads it (a number of ms, or
<digits><ms|s|m|h|d>), or a Prometheus duration of one unit (<digits><ms|s|m|h|d|w|y>),
set under .key in the dict .into.
*/}}
{{- define "report-gateway.durationMs" -}}
{{- $v := .value }}
{{- $ms := 0 }}
{{- if not (kindIs "string" $v) }}{{ $ms = int $v }}
{{- else if hasSuffix "ms" $v }}{{ $ms = int (trimSuffix "ms" $v) }}
{{- else if hasSuffix "s" $v }}{{ $ms = mul (trimSuffix "s" $v) 1000 }}
{{- else if hasSuffix "m" $v }}{{ $ms = mul (trimSuffix "m" $v) 60000 }}
{{- else if hasSuffix "h" $v }}{{ $ms = mul (trimSuffix "h" $v) 3600000 }}
{{- else if hasSuffix "d" $v }}{{ $ms = mul (trimSuffix "d" $v) 86400000 }}
{{- else if hasSuffix "w" $v }}{{ $ms = mul (trimSuffix "w" $v) 604800000 }}
{{- else if hasSuffix "y" $v }}{{ $ms = mul (trimSuffix "y" $v) 31536000000 }}
{{- end }}
{{- $_ := set .into .key $ms }}
{{- end }}

{{/*
The ConfigMap holding CONFIG_FILE. Not <fullname>, the name it had while it also held
the teams: pods of that chart have no TEAMS_FILE, and would reload a teams-less file
under that name as "no team" (every key 401) until the upgrade replaced them. A
ConfigMap Helm deletes stays mounted as it was, so they keep their teams to the end.
*/}}
{{- define "report-gateway.settingsConfigMapName" -}}
{{- printf "%s-settings" (include "report-gateway.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret holding the teams file (TEAMS_FILE): teamsSecret.existingSecret, else <fullname>-teams. */}}
{{- define "report-gateway.teamsSecretName" -}}
{{- .Values.teamsSecret.existingSecret | default (printf "%s-teams" (include "report-gateway.fullname" .) | trunc 63 | trimSuffix "-") }}
{{- end }}

{{/*
The pod's terminationGracePeriodSeconds: the preStop sleep (if any), then the gateway's
shutdownDrain after SIGTERM and its shutdownGrace, then a margin for closing pools. Derived rather than set,
so raising one of them can never leave SIGKILL cutting requests still allowed to finish.
*/}}
{{- define "report-gateway.terminationGracePeriodSeconds" -}}
{{- add .Values.preStopSleepSeconds .Values.shutdownDrainSeconds .Values.shutdownGraceSeconds .Values.terminationGraceMarginSeconds }}
{{- end }}

{{/* The admin listener's Service (admin-service.yaml). */}}
{{- define "report-gateway.adminServiceName" -}}
{{- printf "%s-admin" (include "report-gateway.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
ADMIN_HOSTS: the names the admin listener answers to besides IP addresses and localhost.
The admin Service's names within the cluster (with adminService.enabled), then adminHosts;
"" for none. The gateway takes them from here only: config.admin.hosts is refused.
*/}}
{{- define "report-gateway.adminHosts" -}}
{{- with .Values.config.admin }}{{ if hasKey . "hosts" }}
{{- fail "config.admin.hosts: set the value adminHosts instead (the chart adds the admin Service's names to it, as ADMIN_HOSTS)" }}
{{- end }}{{ end }}
{{- $hosts := join "," .Values.adminHosts }}
{{- if .Values.adminService.enabled }}
{{- $svc := include "report-gateway.adminServiceName" . }}
{{- $ns := .Release.Namespace }}
{{- $own := printf "%s,%s.%s,%s.%s.svc,%s.%s.svc.%s" $svc $svc $ns $svc $ns $svc $ns .Values.clusterDomain }}
{{- if $hosts }}{{ $hosts = printf "%s,%s" $own $hosts }}{{ else }}{{ $hosts = $own }}{{ end }}
{{- end }}
{{- $hosts }}
{{- end }}

{{/*
PromQL label matchers of this release's series: monitoring.selector, else the release
namespace and the job the ServiceMonitor gives (the admin Service's name).
*/}}
{{- define "report-gateway.metricSelector" -}}
{{- $job := include "report-gateway.adminServiceName" . }}
{{- .Values.monitoring.selector | default (printf "namespace=%q,job=%q" .Release.Namespace $job) }}
{{- end }}

{{/* Non-empty when the gateway uses Redis (REDIS_URL from values, or Redis in `config`). */}}
{{/*
The alerts' rate() and increase() windows hold four scrapes of the chart's ServiceMonitor
at least: rate() needs two samples in its window, and four keep one missed scrape from
emptying it (no value: the alert cannot fire) or making it jump. A shorter window of an
alert rendered is refused, naming it. Without the chart's ServiceMonitor the interval is
the scraper's own, not known here (docs/operations/monitoring.md says the bound).
*/}}
{{- define "report-gateway.checkAlertWindows" -}}
{{- if .Values.serviceMonitor.enabled }}
{{- $ms := dict "interval" 0 "window" 0 }}
{{- include "report-gateway.durationMs" (dict "value" .Values.serviceMonitor.interval "into" $ms "key" "interval") }}
{{- $least := mul 4 $ms.interval }}
{{- $redis := include "report-gateway.usesRedis" . }}
{{- range $name, $alert := .Values.monitoring.prometheusRule.alerts }}
{{- if and $alert.enabled (hasKey $alert "window") (or $redis (not (regexMatch "^redis" $name))) }}
{{- include "report-gateway.durationMs" (dict "value" $alert.window "into" $ms "key" "window") }}
{{- if lt $ms.window $least }}
{{- fail (printf "monitoring.prometheusRule.alerts.%s.window: %s is shorter than 4 × serviceMonitor.interval (%s): %ds at least. rate() and increase() need two scrapes in their window, and four keep one missed scrape from emptying it (the alert could not fire): lengthen the window, or scrape more often" $name $alert.window $.Values.serviceMonitor.interval (div $least 1000)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "report-gateway.usesRedis" -}}
{{- if or .Values.redis.url .Values.redis.existingSecret.name }}true{{ end }}
{{- with .Values.config.redis }}{{ if or .url .sentinels .cluster }}true{{ end }}{{ end }}
{{- end }}

{{/* The platform's address when `config` sets it (platform.baseUrl of the CONFIG_FILE), else empty. */}}
{{- define "report-gateway.configBaseUrl" -}}
{{- with .Values.config.platform }}{{ .baseUrl }}{{ end }}
{{- end }}

{{/* Non-empty when `config` lets teams' webhooks push to some hosts (jobs.webhookHosts): their receivers then need egress. */}}
{{- define "report-gateway.usesWebhooks" -}}
{{- with .Values.config.jobs }}{{ if .webhookHosts }}true{{ end }}{{ end }}
{{- end }}

{{/*
The gateway stops at start (exit 78) when a team's webhook points at a host not in
jobs.webhookHosts, or when that list is empty (webhooks off): refused here, naming the
team, with the gateway's message. A host is compared as the gateway's URL parser reads it
(lower case, the port aside), where that reading is the URL's own text: a plain http(s)
URL of a DNS name or a dotted-quad IPv4 address. Any other host (an IDN, IPv6, an IPv4
address in another spelling, a URL Go's parser and the gateway's read apart) is left to
the gateway, so nothing the gateway accepts is refused here.
*/}}
{{- define "report-gateway.checkWebhooks" -}}
{{- $hosts := "" -}}
{{- with .Values.config.jobs }}{{ with .webhookHosts }}{{ $hosts = . }}{{ end }}{{ end }}
{{- range $name, $team := .Values.teams }}
{{- if and (kindIs "map" $team) $team.webhook }}
{{- $tail := printf "; every pod would stop at start with this (exit 78): list the webhook's host in config.jobs.webhookHosts, or remove teams.%s.webhook" $name }}
{{- if not $hosts }}
{{- fail (printf "teams.%s.webhook.url: jobs.webhookHosts is empty: webhooks are off%s" $name $tail) }}
{{- end }}
{{- $url := "" }}
{{- if kindIs "map" $team.webhook }}{{ with $team.webhook.url }}{{ if kindIs "string" . }}{{ $url = . }}{{ end }}{{ end }}{{ end }}
{{- if regexMatch "^https?://[A-Za-z0-9._-]+(:[0-9]*)?([/?#]|$)" $url }}
{{- $host := lower (trimPrefix "http://" (trimPrefix "https://" (regexFind "^https?://[A-Za-z0-9._-]+" $url))) }}
{{- $number := regexMatch "(^|[.])(0[xX][0-9A-Fa-f]*|[0-9]+)[.]?$" $host }}
{{- $quad := regexMatch "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])[.]){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$" $host }}
{{- if and (kindIs "slice" $hosts) (or (not $number) $quad) }}
{{- $listed := false }}
{{- range $hosts }}{{ if and (kindIs "string" .) (eq (lower .) $host) }}{{ $listed = true }}{{ end }}{{ end }}
{{- if not $listed }}
{{- fail (printf "teams.%s.webhook.url: %s is not in jobs.webhookHosts%s" $name $host $tail) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Non-empty when `config` names Redis Sentinels (their ports then need egress too). */}}
{{- define "report-gateway.usesSentinels" -}}
{{- with .Values.config.redis }}{{ if .sentinels }}true{{ end }}{{ end }}
{{- end }}

{{/* The container's CPU request (resources.requests.cpu), else empty. */}}
{{- define "report-gateway.cpuRequest" -}}
{{- with .Values.resources.requests }}{{ .cpu }}{{ end }}
{{- end }}

{{/*
Choices between two values, each told at render with both names and what to do: a schema's
`not` would say where it failed (helm prints `/secrets/keys: must NOT be valid`), never why.
The platform token comes from platformToken or from the password login's four keys (the
gateway stops at start on both, or on a login missing one, exit 78); REDIS_URL from
redis.url or redis.existingSecret; the teams from `teams` or an existing Secret.
*/}}
{{- define "report-gateway.checkChoices" -}}
{{- $k := .Values.secrets.keys }}
{{- if and $k.platformToken $k.platformUsername }}
{{- fail (printf "secrets.keys.platformToken and secrets.keys.platformUsername: both set, and the platform token comes from one of them (the gateway stops at start on both, exit 78): for the password login set secrets.keys.platformToken=\"\" (it names the key %q), or clear the four login keys" $k.platformToken) }}
{{- end }}
{{- if or $k.platformUsername $k.platformPassword $k.platformClientId $k.platformClientSecret }}
{{- $missing := "" }}
{{- range $name, $key := $k }}
{{- if and (contains $name "platformUsername platformPassword platformClientId platformClientSecret") (not $key) }}
{{- if $missing }}
{{- $missing = printf "%s, %s" $missing $name }}
{{- else }}
{{- $missing = $name }}
{{- end }}
{{- end }}
{{- end }}
{{- if $missing }}
{{- fail (printf "secrets.keys: the password login needs all four keys: platformUsername, platformPassword, platformClientId, platformClientSecret; not set: %s" $missing) }}
{{- end }}
{{- end }}
{{- if and .Values.redis.url .Values.redis.existingSecret.name }}
{{- fail "redis.url and redis.existingSecret.name: both set, and REDIS_URL comes from one of them: keep redis.url for a URL without a password, or redis.existingSecret alone" }}
{{- end }}
{{- if and .Values.teams .Values.teamsSecret.existingSecret }}
{{- fail (printf "teams and teamsSecret.existingSecret: both set; the existing Secret %s holds the teams itself, and the chart makes no Secret of teams: put the teams in that Secret and leave teams empty, or clear teamsSecret.existingSecret" .Values.teamsSecret.existingSecret) }}
{{- end }}
{{- end }}

{{/*
Each key of secrets.keys in use names a file of its own in the Secret. Two naming one key
read one value as two secrets: GATEWAY_SECRET_FALLBACK the same as GATEWAY_SECRET, or
ADMIN_VIEWER_TOKEN as ADMIN_TOKEN, stops every pod at start (exit 78), and with
secrets.create the Secret would hold the key twice. With secrets.create, the same checks
on the values: a fallback or a viewer token equal to the secret or token beside it.
*/}}
{{- define "report-gateway.checkSecretKeys" -}}
{{- $seen := dict }}
{{- range $name, $key := .Values.secrets.keys }}
{{- if $key }}
{{- range $other, $otherName := $seen }}
{{- if eq $other $key }}
{{- $hint := "one secret each" }}
{{- if and (eq $otherName "gatewaySecret") (eq $name "gatewaySecretFallback") }}
{{- $hint = "the gateway stops at start on a fallback that is GATEWAY_SECRET itself, exit 78; to change the gateway secret, step 2 swaps the two keys: gatewaySecret the new one, gatewaySecretFallback the old (docs/operations/deploy.md)" }}
{{- else if and (eq $otherName "adminToken") (eq $name "adminViewerToken") }}
{{- $hint = "the gateway stops at start on a viewer token that is ADMIN_TOKEN itself, exit 78" }}
{{- end }}
{{- fail (printf "secrets.keys.%s and secrets.keys.%s both name the key %q of the Secret: each names a file of its own (%s)" $otherName $name $key $hint) }}
{{- end }}
{{- end }}
{{- $_ := set $seen $key $name }}
{{- end }}
{{- end }}
{{- if not .Values.secrets.create }}
{{- range $name, $value := .Values.secrets.values }}
{{- if $value }}
{{- fail (printf "secrets.values.%s is set but secrets.create is false: the chart makes no Secret from it, and the pods would wait for the Secret %s made outside Helm; set secrets.create=true, or leave secrets.values empty" $name (include "report-gateway.secretName" $)) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.secrets.create .Values.secrets.existingSecret }}
{{- fail (printf "secrets.create and secrets.existingSecret: both set; the chart would make the Secret %s itself (an install fails on one made outside Helm, an upgrade overwrites it): keep secrets.create=true with no existingSecret (the Secret is named after the release), or existingSecret alone" .Values.secrets.existingSecret) }}
{{- end }}
{{- if .Values.secrets.create }}
{{- $k := .Values.secrets.keys }}
{{- $v := .Values.secrets.values }}
{{- if and $k.gatewaySecret $k.gatewaySecretFallback $v.gatewaySecret (eq $v.gatewaySecret $v.gatewaySecretFallback) }}
{{- fail "secrets.values.gatewaySecretFallback: the same as secrets.values.gatewaySecret; the fallback is the other secret of a change (the next one, or the old), and the gateway stops at start on the same one (exit 78): set the other, or clear secrets.keys.gatewaySecretFallback" }}
{{- end }}
{{- if and $k.adminToken $k.adminViewerToken $v.adminToken (eq $v.adminToken $v.adminViewerToken) }}
{{- fail "secrets.values.adminViewerToken: the same as secrets.values.adminToken; a viewer needs a token of its own, and the gateway stops at start on the same one (exit 78)" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
With secrets.create, the values of the Secret the gateway reads at start alone (the gateway
secret, its fallback, a login's values, the Sentinel password), as one YAML text; "" for none.
Its digest is a pod annotation: a change rolls the pods, so that no replica keeps an old one
until some later restart. The platform and admin tokens, re-read in place, are left out.
*/}}
{{- define "report-gateway.secretsReadAtStart" -}}
{{- if .Values.secrets.create }}
{{- $k := .Values.secrets.keys }}
{{- $v := .Values.secrets.values }}
{{- $d := dict }}
{{- if $k.gatewaySecret }}{{ $_ := set $d "gatewaySecret" $v.gatewaySecret }}{{ end }}
{{- if $k.gatewaySecretFallback }}{{ $_ := set $d "gatewaySecretFallback" $v.gatewaySecretFallback }}{{ end }}
{{- if $k.platformUsername }}{{ $_ := set $d "platformUsername" $v.platformUsername }}{{ end }}
{{- if $k.platformPassword }}{{ $_ := set $d "platformPassword" $v.platformPassword }}{{ end }}
{{- if $k.platformClientId }}{{ $_ := set $d "platformClientId" $v.platformClientId }}{{ end }}
{{- if $k.platformClientSecret }}{{ $_ := set $d "platformClientSecret" $v.platformClientSecret }}{{ end }}
{{- if $k.redisSentinelPassword }}{{ $_ := set $d "redisSentinelPassword" $v.redisSentinelPassword }}{{ end }}
{{- if $d }}{{ toYaml $d }}{{ end }}
{{- end }}
{{- end }}

{{/*
A setting of `config` that a variable the chart sets also gives: the gateway takes the
variable over the config file, so the setting would be ignored in silence. Refused, with
the value to set instead.
*/}}
{{- define "report-gateway.checkConfigBesideEnv" -}}
{{- $c := .Values.config }}
{{- $env := "which the gateway takes over the config file (config would be ignored)" }}
{{- if hasKey $c "host" }}{{ fail (printf "config.host: the chart sets HOST (0.0.0.0: every interface of the pod), %s; remove it" $env) }}{{ end }}
{{- if hasKey $c "port" }}{{ fail (printf "config.port: the chart sets PORT from ports.http, %s; set ports.http instead (the container port, Service and probes follow it)" $env) }}{{ end }}
{{- if hasKey $c "logLevel" }}{{ fail (printf "config.logLevel: the chart sets LOG_LEVEL from the value logLevel, %s; set logLevel instead" $env) }}{{ end }}
{{- with $c.admin }}
{{- if hasKey . "host" }}{{ fail (printf "config.admin.host: the chart sets ADMIN_HOST (the pod IP, or adminHost), %s; set adminHost instead" $env) }}{{ end }}
{{- if hasKey . "port" }}{{ fail (printf "config.admin.port: the chart sets ADMIN_PORT from ports.admin, %s; set ports.admin instead" $env) }}{{ end }}
{{- if and (hasKey . "tokensFile") $.Values.secrets.keys.adminTokens }}{{ fail (printf "config.admin.tokensFile: the chart sets ADMIN_TOKENS_FILE from secrets.keys.adminTokens, %s; keep one" $env) }}{{ end }}
{{- end }}
{{- with $c.platform }}
{{- if and (hasKey . "baseUrl") $.Values.platform.baseUrl }}{{ fail (printf "config.platform.baseUrl: the chart sets PLATFORM_BASE_URL from platform.baseUrl, %s; keep one" $env) }}{{ end }}
{{- if and (hasKey . "tokenUrl") $.Values.platform.tokenUrl }}{{ fail (printf "config.platform.tokenUrl: the chart sets PLATFORM_TOKEN_URL from platform.tokenUrl, %s; keep one" $env) }}{{ end }}
{{- if and (hasKey . "grantType") $.Values.platform.grantType }}{{ fail (printf "config.platform.grantType: the chart sets PLATFORM_GRANT_TYPE from platform.grantType, %s; keep one" $env) }}{{ end }}
{{- if and (hasKey . "tokenFile") $.Values.secrets.keys.platformToken }}{{ fail (printf "config.platform.tokenFile: the chart sets PLATFORM_TOKEN_FILE from secrets.keys.platformToken, %s; keep one" $env) }}{{ end }}
{{- end }}
{{- with $c.redis }}
{{- if and (hasKey . "url") (or $.Values.redis.url $.Values.redis.existingSecret.name) }}{{ fail (printf "config.redis.url: the chart sets REDIS_URL from redis.url or redis.existingSecret, %s; keep one" $env) }}{{ end }}
{{- end }}
{{- end }}

{{/* Non-empty when at least one Secret key is in use (the Secret volume is mounted then). */}}
{{- define "report-gateway.usesSecret" -}}
{{- $k := .Values.secrets.keys }}
{{- if or $k.platformToken $k.adminToken $k.adminViewerToken $k.adminTokens $k.gatewaySecret $k.gatewaySecretFallback $k.platformUsername $k.platformPassword $k.platformClientId $k.platformClientSecret $k.redisSentinelPassword }}true{{ end }}
{{- end }}

{{/*
A map as OTEL_RESOURCE_ATTRIBUTES writes it: key=value,key=value, in key order (the schema
keeps ',' and '=' out of both).
*/}}
{{- define "report-gateway.keyValues" -}}
{{- $first := true -}}
{{- range $key, $value := . -}}
{{- if not $first }},{{ end -}}
{{- $key }}={{ $value -}}
{{- $first = false -}}
{{- end -}}
{{- end -}}

{{/*
One egress rule of the NetworkPolicy to peers given as podLabels (in the namespaces of
namespaceLabels, the release's when empty) and cidrs, on ports; with no peer at all, any
address on the ports. Its context is the peers' values (networkPolicy.egress.collector, .webhooks).
*/}}
{{- define "report-gateway.egressPeers" -}}
- ports:
    {{- range .ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- if or .podLabels .namespaceLabels .cidrs }}
  to:
    {{- if or .podLabels .namespaceLabels }}
    - podSelector:
        matchLabels:
          {{- toYaml .podLabels | nindent 10 }}
      {{- with .namespaceLabels }}
      namespaceSelector:
        matchLabels:
          {{- toYaml . | nindent 10 }}
      {{- end }}
    {{- end }}
    {{- range .cidrs }}
    - ipBlock:
        cidr: {{ . | quote }}
    {{- end }}
  {{- end }}
{{- end }}

{{/*
The port of a URL the gateway reaches: the one written after its host, else its scheme's
(https 443, http 80, redis and rediss 6379); empty for a text that is no such URL (a path).
*/}}
{{- define "report-gateway.urlPort" -}}
{{- $scheme := lower (regexFind "^[A-Za-z][A-Za-z0-9+.-]*://" .) }}
{{- $hostPort := regexFind "[^@]*$" (regexFind "^[^/?#]*" (trimPrefix $scheme (lower .))) }}
{{- $port := trimPrefix ":" (regexFind ":[0-9]+$" $hostPort) }}
{{- if $port }}{{ int $port }}
{{- else if eq $scheme "https://" }}443
{{- else if eq $scheme "http://" }}80
{{- else if or (eq $scheme "redis://") (eq $scheme "rediss://") }}6379
{{- end }}
{{- end }}

{{/*
Non-empty when an egress rule of the NetworkPolicy opens TCP port .port, whichever its
peers (where a name resolves is not known here): the platform's; Redis' (and the
Sentinels') when Redis is used; the collector's when tracing is on; the webhook
receivers' when webhooks are on; an extra rule that lists no port, lists it (or a range,
endPort, holding it) or names a port (a name is not known here).
*/}}
{{- define "report-gateway.egressOpens" -}}
{{- $root := .root }}
{{- $port := int .port }}
{{- $egress := $root.Values.networkPolicy.egress }}
{{- range $egress.platform.ports }}{{ if eq (int .) $port }}true{{ end }}{{ end }}
{{- if include "report-gateway.usesRedis" $root }}
{{- range $egress.redis.ports }}{{ if eq (int .) $port }}true{{ end }}{{ end }}
{{- if include "report-gateway.usesSentinels" $root }}
{{- range $egress.redis.sentinelPorts }}{{ if eq (int .) $port }}true{{ end }}{{ end }}
{{- end }}
{{- end }}
{{- if $root.Values.tracing.endpoint }}
{{- range $egress.collector.ports }}{{ if eq (int .) $port }}true{{ end }}{{ end }}
{{- end }}
{{- if include "report-gateway.usesWebhooks" $root }}
{{- range $egress.webhooks.ports }}{{ if eq (int .) $port }}true{{ end }}{{ end }}
{{- end }}
{{- range $egress.extra }}
{{- if not .ports }}true{{ end }}
{{- range .ports }}
{{- if kindIs "string" .port }}true
{{- else if .port }}
{{- if eq (int .port) $port }}true
{{- else if .endPort }}{{ if and (not (lt $port (int .port))) (not (gt $port (int .endPort))) }}true{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Rendering fails when no egress rule of the NetworkPolicy opens .port, the port of the
value named .value, saying what the pods would lose (.blocks) and the list to open it in
(.list): the policy applied, the pods would not reach it, and nothing would say why.
*/}}
{{- define "report-gateway.checkEgressPort" -}}
{{- if and .port (not (include "report-gateway.egressOpens" (dict "root" .root "port" .port))) }}
{{- fail (printf "%s: %s is on port %d, which no egress rule of the NetworkPolicy opens: %s; add %d to %s (or a rule to networkPolicy.egress.extra)" .list .value (int .port) .blocks (int .port) .list) }}
{{- end }}
{{- end }}

{{/*
Each address the chart knows the gateway reaches, its port checked against the
NetworkPolicy's egress rules: the platform (platform.baseUrl, else config's; an absolute
token URL, the values' else config's; each credential's own base and token URLs), Redis
(redis.url, else config's; each Sentinel and Cluster seed of config.redis), the teams'
webhook receivers (with webhooks on) and the collector (tracing.endpoint). A URL held in a Secret (redis.existingSecret) is not known
here, nor the Cluster nodes the seeds name.
*/}}
{{- define "report-gateway.checkEgressPorts" -}}
{{- $root := . }}
{{- $platformList := "networkPolicy.egress.platform.ports" }}
{{- $platformLoss := "every call to the platform would time out" }}
{{- $redisList := "networkPolicy.egress.redis.ports" }}
{{- $redisLoss := "every replica would run without Redis" }}
{{- $configPlatform := default (dict) .Values.config.platform }}
{{- $configRedis := default (dict) .Values.config.redis }}
{{- $check := "report-gateway.checkEgressPort" }}
{{- $port := "report-gateway.urlPort" }}
{{- if .Values.platform.baseUrl }}
{{- include $check (dict "root" $root "value" "platform.baseUrl" "port" (include $port .Values.platform.baseUrl) "list" $platformList "blocks" $platformLoss) }}
{{- else if $configPlatform.baseUrl }}
{{- include $check (dict "root" $root "value" "config.platform.baseUrl" "port" (include $port $configPlatform.baseUrl) "list" $platformList "blocks" $platformLoss) }}
{{- end }}
{{- if .Values.platform.tokenUrl }}
{{- include $check (dict "root" $root "value" "platform.tokenUrl" "port" (include $port .Values.platform.tokenUrl) "list" $platformList "blocks" $platformLoss) }}
{{- else if $configPlatform.tokenUrl }}
{{- include $check (dict "root" $root "value" "config.platform.tokenUrl" "port" (include $port $configPlatform.tokenUrl) "list" $platformList "blocks" $platformLoss) }}
{{- end }}
{{- range $name, $credential := .Values.config.credentials }}
{{- if kindIs "map" $credential }}
{{- with $credential.baseUrl }}
{{- include $check (dict "root" $root "value" (printf "config.credentials.%s.baseUrl" $name) "port" (include $port .) "list" $platformList "blocks" $platformLoss) }}
{{- end }}
{{- with $credential.tokenUrl }}
{{- include $check (dict "root" $root "value" (printf "config.credentials.%s.tokenUrl" $name) "port" (include $port .) "list" $platformList "blocks" $platformLoss) }}
{{- end }}
{{- end }}
{{- end }}
{{- if .Values.redis.existingSecret.name }}
{{- else if .Values.redis.url }}
{{- include $check (dict "root" $root "value" "redis.url" "port" (include $port .Values.redis.url) "list" $redisList "blocks" $redisLoss) }}
{{- else if $configRedis.url }}
{{- include $check (dict "root" $root "value" "config.redis.url" "port" (include $port $configRedis.url) "list" $redisList "blocks" $redisLoss) }}
{{- end }}
{{- range $i, $node := $configRedis.sentinels }}
{{- include $check (dict "root" $root "value" (printf "config.redis.sentinels.%d.port" $i) "port" $node.port "list" "networkPolicy.egress.redis.sentinelPorts" "blocks" $redisLoss) }}
{{- end }}
{{- range $i, $node := $configRedis.cluster }}
{{- include $check (dict "root" $root "value" (printf "config.redis.cluster.%d.port" $i) "port" $node.port "list" $redisList "blocks" $redisLoss) }}
{{- end }}
{{- if include "report-gateway.usesWebhooks" . }}
{{- range $name, $team := .Values.teams }}
{{- if and (kindIs "map" $team) $team.webhook (kindIs "map" $team.webhook) }}
{{- with $team.webhook.url }}
{{- include $check (dict "root" $root "value" (printf "teams.%s.webhook.url" $name) "port" (include $port .) "list" "networkPolicy.egress.webhooks.ports" "blocks" "each of the team's webhook pushes would time out") }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.tracing.endpoint }}
{{- include $check (dict "root" $root "value" "tracing.endpoint" "port" (include $port .) "list" "networkPolicy.egress.collector.ports" "blocks" "no trace would reach the collector") }}
{{- end }}
{{- end }}

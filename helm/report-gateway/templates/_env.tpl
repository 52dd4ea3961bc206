{{/*
The container's variables the chart sets (Kubernetes' env format, at column 0). extraEnv may
name none of them: of two entries of one name the pod takes the last, while the ports,
probes, Services and mounts follow the values.
*/}}
{{- define "report-gateway.env" -}}
{{- $secretDir := .Values.secrets.mountPath }}
{{- $keys := .Values.secrets.keys }}
# The proxy listener binds every interface of the pod.
- name: HOST
  value: "0.0.0.0"
- name: PORT
  value: {{ .Values.ports.http | quote }}
{{- if .Values.adminHost }}
- name: ADMIN_HOST
  value: {{ .Values.adminHost | quote }}
{{- else }}
# The admin listener binds the pod IP only: the admin Service, Prometheus and the
# kubelet's probes all connect to that address, and nothing else in the pod's
# network namespace (loopback, other interfaces) reaches /admin/*.
- name: ADMIN_HOST
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- end }}
- name: ADMIN_PORT
  value: {{ .Values.ports.admin | quote }}
{{- with include "report-gateway.adminHosts" . }}
# Names the admin listener answers to besides IP addresses and localhost: a request
# naming another (a page whose name was made to resolve to the pod, DNS rebinding) is 421.
- name: ADMIN_HOSTS
  value: {{ . | quote }}
{{- end }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: CONFIG_FILE
  value: "/etc/report-gateway/config.yaml"
- name: TEAMS_FILE
  value: {{ printf "%s/%s" .Values.teamsSecret.mountPath .Values.teamsSecret.key | quote }}
{{- /* Without the platform's address the gateway stops at start (exit 78): refused here, at the install. */}}
{{- if .Values.platform.baseUrl }}
- name: PLATFORM_BASE_URL
  value: {{ .Values.platform.baseUrl | quote }}
{{- else if not (include "report-gateway.configBaseUrl" .) }}
{{- fail "platform.baseUrl is required: the platform's address, an http(s) origin (--set platform.baseUrl=https://<platform host>); without it every pod would stop at start naming PLATFORM_BASE_URL (exit 78)" }}
{{- end }}
{{- with .Values.platform.tokenUrl }}
- name: PLATFORM_TOKEN_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.platform.grantType }}
- name: PLATFORM_GRANT_TYPE
  value: {{ . | quote }}
{{- end }}
{{- if .Values.redis.existingSecret.name }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret.name | quote }}
      key: {{ .Values.redis.existingSecret.key | quote }}
{{- else if .Values.redis.url }}
- name: REDIS_URL
  value: {{ .Values.redis.url | quote }}
{{- end }}
# Secrets: only paths of files in the mounted Secret, never their values.
{{- with $keys.platformToken }}
- name: PLATFORM_TOKEN_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.adminToken }}
- name: ADMIN_TOKEN_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.adminViewerToken }}
- name: ADMIN_VIEWER_TOKEN_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.adminTokens }}
- name: ADMIN_TOKENS_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.gatewaySecret }}
- name: GATEWAY_SECRET_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.gatewaySecretFallback }}
- name: GATEWAY_SECRET_FALLBACK_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.platformUsername }}
- name: PLATFORM_USERNAME_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.platformPassword }}
- name: PLATFORM_PASSWORD_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.platformClientId }}
- name: PLATFORM_CLIENT_ID_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.platformClientSecret }}
- name: PLATFORM_CLIENT_SECRET_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with $keys.redisSentinelPassword }}
- name: REDIS_SENTINEL_PASSWORD_FILE
  value: {{ printf "%s/%s" $secretDir . | quote }}
{{- end }}
{{- with .Values.tracing }}
{{- if .endpoint }}
# OpenTelemetry traces (the standard OTEL_* variables).
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ .protocol | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ .serviceName | default "report-gateway" | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | quote }}
{{- with .samplerRatio }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
{{- if .resourceAttributes }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ include "report-gateway.keyValues" .resourceAttributes | quote }}
{{- end }}
{{- if .headersSecret.name }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ .headersSecret.name | quote }}
      key: {{ .headersSecret.key | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The chart's name, or nameOverride. */}}
{{- define "slackbot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: fullnameOverride, else the release's name when it
already contains the chart's (release "slackbot" gives "slackbot"), else
<release>-<chart>. 63 characters at most (DNS labels).
*/}}
{{- define "slackbot.fullname" -}}
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

{{/* The labels that select slackbot's pods; never change them in an upgrade. */}}
{{- define "slackbot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slackbot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{/* Every object's labels. */}}
{{- define "slackbot.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "slackbot.selectorLabels" . }}
app.kubernetes.io/version: {{ default .Chart.AppVersion .Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The routing file's text: routesFile as it is, else routes as YAML. */}}
{{- define "slackbot.routesFile" -}}
{{- if .Values.routesFile }}
{{- .Values.routesFile | trimSuffix "\n" }}
{{- else }}
{{- toYaml (required "routes (or routesFile) is required: slackbot does not start without a routing file" .Values.routes) }}
{{- end }}
{{- end }}

{{/* The public base URL: publicURL, else https://<host>. */}}
{{- define "slackbot.publicURL" -}}
{{- if .Values.publicURL }}
{{- .Values.publicURL }}
{{- else if .Values.host }}
{{- printf "https://%s" .Values.host }}
{{- end }}
{{- end }}

{{/* The probes' and the scrape's scheme: HTTPS when the pod serves TLS. */}}
{{- define "slackbot.scheme" -}}
{{- if .Values.tlsSecret }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/*
The REDIS_URL variable (and, when the URL is built, the password it
refers to as $(SLACKBOT_REDIS_PASSWORD), which Kubernetes expands at
start; slackbot reads only REDIS_URL). See values.yaml, redis.mode.
*/}}
{{- define "slackbot.redisEnv" -}}
{{- $r := .Values.redis }}
{{- if eq $r.mode "secret" }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.existingSecret }}
      key: {{ required "redis.urlKey is required when redis.mode is secret" $r.urlKey }}
{{- else if or (eq $r.mode "standalone") (eq $r.mode "sentinel") }}
{{- $auth := "" }}
{{- if $r.auth.passwordKey }}
{{- $auth = ":$(SLACKBOT_REDIS_PASSWORD)@" }}
- name: SLACKBOT_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ default .Values.existingSecret $r.auth.existingSecret }}
      key: {{ $r.auth.passwordKey }}
{{- end }}
{{- $scheme := ternary "rediss" "redis" (eq (toString $r.tls) "true") }}
- name: REDIS_URL
{{- if eq $r.mode "standalone" }}
  value: {{ printf "%s://%s%s:%v/%v" $scheme $auth (required "redis.standalone.host is required" $r.standalone.host) $r.standalone.port $r.db | quote }}
{{- else }}
{{- if not $r.sentinel.hosts }}{{ fail "redis.sentinel.hosts: name at least one Sentinel (host:port)" }}{{ end }}
{{- $query := "" }}
{{- if and $r.auth.passwordKey $r.sentinel.authenticate }}
{{- $query = "?sentinel_password=$(SLACKBOT_REDIS_PASSWORD)" }}
{{- end }}
  value: {{ printf "%s+sentinel://%s%s/%s/%v%s" $scheme $auth (join "," $r.sentinel.hosts) (required "redis.sentinel.masterName is required" $r.sentinel.masterName) $r.db $query | quote }}
{{- end }}
{{- else }}
{{- fail (printf "redis.mode %q: want secret, standalone or sentinel" $r.mode) }}
{{- end }}
{{- end }}

{{/* An optional variable from the existing Secret, under its own name. */}}
{{- define "slackbot.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .name }}
{{- if get . "optional" }}
      optional: true
{{- end }}
{{- end }}

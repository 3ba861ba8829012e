{{/* The chart's name, shortened to what a label value allows. */}}
{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's object name. */}}
{{- define "sluice.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels that select this release's pods: the Service, the PDB, the
     anti-affinity and the spread all use exactly these. */}}
{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sluice.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "sluice.secretName" -}}
{{- default (include "sluice.fullname" .) .Values.existingSecret -}}
{{- end -}}

{{/* A sluice duration ("500us", "20ms", "5s", "1m", "2h") in whole seconds,
     rounded up. Anything else fails the render, as sluice would refuse it. */}}
{{- define "sluice.seconds" -}}
{{- $text := toString . | trim -}}
{{- $number := regexFind "^[0-9]+" $text -}}
{{- $unit := trimPrefix $number $text -}}
{{- if not $number -}}
{{- fail (printf "duration %q: expected a number and a unit (us, ms, s, m, h), e.g. \"30s\"" $text) -}}
{{- end -}}
{{- $n := atoi $number -}}
{{- if eq $unit "h" -}}{{ mul $n 3600 }}
{{- else if eq $unit "m" -}}{{ mul $n 60 }}
{{- else if eq $unit "s" -}}{{ $n }}
{{- else if eq $unit "ms" -}}{{ div (add $n 999) 1000 }}
{{- else if or (eq $unit "us") (eq $unit "µs") -}}{{ div (add $n 999999) 1000000 }}
{{- else -}}
{{- fail (printf "duration %q has an unknown unit %q: use us, ms, s, m or h" $text $unit) -}}
{{- end -}}
{{- end -}}

{{/* The port of a listen address (IP:PORT) from `config`; a loopback address
     fails the render: nothing outside the pod could connect. */}}
{{- define "sluice.port" -}}
{{- $key := index . 0 -}}
{{- $addr := toString (index . 1) -}}
{{- if or (hasPrefix "127." $addr) (hasPrefix "[::1]" $addr) (hasPrefix "localhost" $addr) -}}
{{- fail (printf "config.%s is %s, a loopback address: kubelet probes, the Service and Prometheus cannot reach it; use 0.0.0.0:PORT" $key $addr) -}}
{{- end -}}
{{- $port := regexFind ":[0-9]+$" $addr | trimPrefix ":" -}}
{{- if not $port -}}
{{- fail (printf "config.%s %q: expected IP:PORT" $key $addr) -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{- define "sluice.mysqlPort" -}}
{{- include "sluice.port" (list "listen" (required "config.listen is required (e.g. 0.0.0.0:6033)" .Values.config.listen)) -}}
{{- end -}}

{{- define "sluice.adminPort" -}}
{{- include "sluice.port" (list "admin_listen" (required "config.admin_listen is required (e.g. 0.0.0.0:9033)" .Values.config.admin_listen)) -}}
{{- end -}}

{{/* terminationGracePeriodSeconds: the preStop sleep, then sluice's own
     shutdown (limits.drain_delay of accepting, then up to
     limits.shutdown_timeout for statements and transactions), plus 5 s for
     the process to exit. sluice's defaults apply to absent keys. */}}
{{- define "sluice.gracePeriod" -}}
{{- $limits := default dict .Values.config.limits -}}
{{- $shutdown := include "sluice.seconds" (default "30s" $limits.shutdown_timeout) | atoi -}}
{{- $drain := include "sluice.seconds" (default "0s" $limits.drain_delay) | atoi -}}
{{- add (int .Values.preStopSleepSeconds) $drain $shutdown 5 -}}
{{- end -}}

{{/* Refuse a fractional CPU limit (see values.yaml, resources), and a pod
     without one unless runtime.worker_threads fixes the thread count. */}}
{{- define "sluice.checkCpu" -}}
{{- $limits := default dict .Values.resources.limits -}}
{{- $runtime := default dict .Values.config.runtime -}}
{{- if hasKey $limits "cpu" -}}
{{- $cpu := toString $limits.cpu -}}
{{- if not (regexMatch "^([1-9][0-9]*|[1-9][0-9]*000m)$" $cpu) -}}
{{- fail (printf "resources.limits.cpu is %s: use whole CPUs (1, 2, 4, ...): sluice runs one session thread per CPU the limit allows" $cpu) -}}
{{- end -}}
{{- else if not $runtime.worker_threads -}}
{{- fail "resources.limits.cpu is not set: set a whole number of CPUs, or config.runtime.worker_threads" -}}
{{- end -}}
{{- end -}}

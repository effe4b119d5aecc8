{{/* Labels on every object of the chart. */}}
{{- define "trainjob.labels" -}}
app.kubernetes.io/name: trainjob
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* Labels that select the controller's pods. */}}
{{- define "trainjob.selectorLabels" -}}
app.kubernetes.io/name: trainjob
app.kubernetes.io/component: controller
{{- end }}

{{/* Labels that select the controller's Service (for the ServiceMonitor). */}}
{{- define "trainjob.serviceSelectorLabels" -}}
app.kubernetes.io/name: trainjob
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

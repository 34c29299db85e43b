{{/* Chart name, truncated to 63 characters. */}}
{{- define "ceph-osd-operator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name, unless it already contains the chart name. */}}
{{- define "ceph-osd-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "ceph-osd-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ceph-osd-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "ceph-osd-operator.labels" -}}
{{ include "ceph-osd-operator.selectorLabels" . }}
app.kubernetes.io/part-of: ceph-osd-operator
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "ceph-osd-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- .Values.serviceAccount.name | default (include "ceph-osd-operator.fullname" .) }}
{{- else }}
{{- .Values.serviceAccount.name | default "default" }}
{{- end }}
{{- end }}

{{/* The leader Lease's name: leaseName, else the full name. */}}
{{- define "ceph-osd-operator.leaseName" -}}
{{- .Values.leaseName | default (include "ceph-osd-operator.fullname" .) }}
{{- end }}

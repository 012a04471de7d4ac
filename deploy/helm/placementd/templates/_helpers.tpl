{{/* Names and labels shared by the templates. */}}

{{- define "placementd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "placementd.fullname" -}}
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

{{- define "placementd.headless" -}}
{{- printf "%s-headless" (include "placementd.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "placementd.serviceName" -}}
{{- default (include "placementd.fullname" .) .Values.service.name -}}
{{- end -}}

{{- define "placementd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "placementd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "placementd.labels" -}}
{{ include "placementd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The DNS suffix of the pods' stable names. */}}
{{- define "placementd.podDomain" -}}
{{- printf "%s.%s.svc.%s" (include "placementd.headless" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{/* --join: the API addresses of the voters that form the cluster. */}}
{{- define "placementd.join" -}}
{{- $full := include "placementd.fullname" . -}}
{{- $domain := include "placementd.podDomain" . -}}
{{- $addrs := list -}}
{{- range $i := until (int .Values.voters.bootstrapExpect) -}}
{{- $addrs = append $addrs (printf "%s-%d.%s:%d" $full $i $domain (int $.Values.ports.http)) -}}
{{- end -}}
{{- join "," $addrs -}}
{{- end -}}

{{- define "placementd.clusterSecretName" -}}
{{- default (printf "%s-cluster-secret" (include "placementd.fullname" .)) .Values.clusterSecret.existingSecret -}}
{{- end -}}

{{- define "placementd.metricsTokenSecretName" -}}
{{- default (printf "%s-metrics-token" (include "placementd.fullname" .)) .Values.metrics.token.existingSecret -}}
{{- end -}}

{{- define "placementd.keystoneSecretName" -}}
{{- default (printf "%s-keystone" (include "placementd.fullname" .)) .Values.keystone.existingSecret -}}
{{- end -}}

{{- define "placementd.tlsSecretName" -}}
{{- $tls := index .root.Values.tls .layer -}}
{{- default (printf "%s-%s-tls" (include "placementd.fullname" .root) .layer) $tls.existingSecret -}}
{{- end -}}

{{- define "placementd.scheme" -}}
{{- if .Values.tls.api.enabled }}HTTPS{{ else }}HTTP{{ end -}}
{{- end -}}

{{/*
Whether the pods get PLACEMENTD_KEYSTONE_PASSWORD: with auth.strategy
keystone, or with a placement.conf only when keystone.existingSecret is
named (the file may carry the password itself).
*/}}
{{- define "placementd.keystonePassword" -}}
{{- if .Values.placementConf.existingSecret -}}
{{- if .Values.keystone.existingSecret }}true{{ end -}}
{{- else if eq .Values.auth.strategy "keystone" }}true{{ end -}}
{{- end -}}

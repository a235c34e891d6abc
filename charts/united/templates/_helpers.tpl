{{/* The one label every object carries, as in manifests/base (the Deployment selects on it). */}}
{{- define "united.labels" -}}
app.kubernetes.io/name: united
{{- end -}}

{{/* The controller's ServiceAccount as an RBAC subject. */}}
{{- define "united.subject" -}}
- kind: ServiceAccount
  name: united-controller
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* The pod webhooks' namespaceSelector: kube-system and the controller's own namespace are
     excluded by name (1.21+) and by the opt-out label the controller sets (1.20). */}}
{{- define "united.webhookNamespaces" -}}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: ["kube-system", {{ .Release.Namespace | quote }}]
    - key: workloadspread.united.io/webhook
      operator: NotIn
      values: ["disabled"]
{{- end -}}

{{/* Where the API server calls the pod webhooks: the Service, or webhook.url (a controller
     outside the cluster, which then also gets --webhook-url and keeps the same URL). */}}
{{- define "united.webhookClient" -}}
{{- with .root.Values.webhook.url -}}
url: {{ printf "%s%s" (trimSuffix "/" .) $.path | quote }}
{{- else -}}
service:
  namespace: {{ .root.Release.Namespace }}
  name: united-webhook
  path: {{ .path }}
  port: 443
{{- end -}}
{{- end -}}

{{- define "united.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

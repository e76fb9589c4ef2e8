{{/* Names and the numbers the resources are derived from. */}}
{{- define "troupe.fullname" -}}
{{- printf "%s" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "troupe.labels" -}}
app.kubernetes.io/name: troupe
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* Distinct spans: replicas / replicasPerSpan (at least 1). */}}
{{- define "troupe.spans" -}}
{{- max 1 (div (int .Values.shards.replicas) (max 1 (int .Values.shards.replicasPerSpan))) -}}
{{- end -}}

{{/* A shard's weights: its share of the model, rounded up. */}}
{{- define "troupe.shardWeightsMiB" -}}
{{- $spans := int (include "troupe.spans" .) -}}
{{- div (add (int .Values.model.sizeMiB) (sub $spans 1)) $spans -}}
{{- end -}}

{{/* What layers: auto may fill: weights and KV cache, with room for spans of uneven size. */}}
{{- define "troupe.shardBudgetMiB" -}}
{{- add (div (mul (int (include "troupe.shardWeightsMiB" .)) 3) 2) (int .Values.shards.cacheMiB) -}}
{{- end -}}

{{- define "troupe.shardMemoryMiB" -}}
{{- add (int (include "troupe.shardBudgetMiB" .)) (int .Values.shards.overheadMiB) -}}
{{- end -}}

{{/* The head maps the model file and reads its embedding and output layers. */}}
{{- define "troupe.headMemoryMiB" -}}
{{- add (int .Values.model.sizeMiB) (int .Values.head.overheadMiB) -}}
{{- end -}}

{{- define "troupe.curveSecret" -}}
{{- default (printf "%s-curve" (include "troupe.fullname" .)) .Values.curve.existingSecret -}}
{{- end -}}

{{- define "troupe.apiKeySecret" -}}
{{- default (printf "%s-api-keys" (include "troupe.fullname" .)) .Values.apiKeys.existingSecret -}}
{{- end -}}

{{/*
The init container that lays the keys out as the node configs expect them
(deploy/config/make-keys.sh's layout) with the modes troupe insists on:
node.key 0600, owned by the troupe user. Secret volumes cannot give that.
*/}}
{{- define "troupe.keysInit" -}}
- name: keys
  image: "{{ .root.Values.image.repository }}:{{ .root.Values.image.tag }}"
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  command: ["/bin/sh", "-c"]
  args:
    - |
      set -eu
      K=/var/lib/troupe/keys
      mkdir -p "$K/{{ .id }}" "$K/head" "$K/allowlist" "$K/clients"
      install -m 600 /secrets/curve/{{ .role }}.key "$K/{{ .id }}/node.key"
      install -m 644 /secrets/curve/{{ .role }}.pub "$K/{{ .id }}/node.pub"
      install -m 644 /secrets/curve/head.pub "$K/head/node.pub"
      install -m 644 /secrets/curve/head.pub "$K/allowlist/head.pub"
      install -m 644 /secrets/curve/shard.pub "$K/allowlist/shard.pub"
      install -m 644 /secrets/curve/clients.pub "$K/clients/clients.pub"
      {{- if eq .role "head" }}
      install -m 600 /secrets/api/api_keys.txt "$K/api_keys.txt"
      {{- end }}
  env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
  volumeMounts:
    - {name: keys, mountPath: /var/lib/troupe/keys}
    - {name: curve, mountPath: /secrets/curve, readOnly: true}
    {{- if eq .role "head" }}
    - {name: api-keys, mountPath: /secrets/api, readOnly: true}
    {{- end }}
{{- end -}}

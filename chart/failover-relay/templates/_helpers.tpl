{{/* Every object's labels: the selector label the kustomize manifests use, plus Helm's own. */}}
{{- define "failover-relay.labels" -}}
app.kubernetes.io/name: failover-relay
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* What the Deployment, Service, PodDisruptionBudget and NetworkPolicy select: the same label as manifests/. */}}
{{- define "failover-relay.selector" -}}
app.kubernetes.io/name: failover-relay
{{- end -}}

{{- define "failover-relay.controlPlane" -}}
{{- if eq .Values.mode "controlPlane" -}}true{{- else if ne .Values.mode "member" -}}
{{- fail (printf "mode %q: use controlPlane or member" .Values.mode) -}}
{{- end -}}
{{- end -}}

{{- define "failover-relay.certManager" -}}
{{- if eq .Values.certificates.mode "certManager" -}}true{{- else if ne .Values.certificates.mode "selfManaged" -}}
{{- fail (printf "certificates.mode %q: use selfManaged or certManager" .Values.certificates.mode) -}}
{{- end -}}
{{- end -}}

{{/* A member relay with cert-manager runs `--member`: cert-manager injects the caBundle, so the relay needs no
     caBundle upkeep, no RBAC and never loads the Kubernetes client (docs/operations.md, "On member clusters"). */}}
{{- define "failover-relay.slimMember" -}}
{{- if and (not (include "failover-relay.controlPlane" .)) (include "failover-relay.certManager" .) -}}true{{- end -}}
{{- end -}}

{{/* The serving certificate and the Service share one name: the apiserver dials <name>.<namespace>.svc. */}}
{{- define "failover-relay.certificateSecret" -}}failover-relay-tls{{- end -}}

{{/* The relay's config file: `config`, with `fence.storage: false` where the chart's value turns the control plane's
     storage fence off (the relay has no flag for that: by default it is on wherever it can work). Empty: no file. */}}
{{- define "failover-relay.config" -}}
{{- $config := deepCopy (.Values.config | default dict) -}}
{{- if and (include "failover-relay.controlPlane" .) (kindIs "bool" .Values.fence.storage) (not .Values.fence.storage) -}}
{{- $fence := deepCopy (get $config "fence" | default dict) -}}
{{- $_ := set $fence "storage" false -}}
{{- $_ := set $config "fence" $fence -}}
{{- end -}}
{{- if $config }}{{ toYaml $config }}{{ end -}}
{{- end -}}

{{/* A member relay runs the storage fence's watcher unless `fence.watch` is false: it needs its cluster's name and
     the --member form (docs/operations.md, "The storage fence"). */}}
{{- define "failover-relay.memberWatcher" -}}
{{- if and (not (include "failover-relay.controlPlane" .)) .Values.fence.watch -}}
{{- if not .Values.fence.memberCluster -}}
{{- fail "mode member: set fence.memberCluster to this member's Karmada cluster name (its relay then suspends a partitioned copy before the new one starts), or fence.watch false (the copy is then fenced by time only)" -}}
{{- end -}}
{{- if not (include "failover-relay.slimMember" .) -}}
{{- fail "fence.memberCluster needs the --member form: certificates.mode certManager (or fence.watch false)" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

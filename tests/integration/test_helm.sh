#!/usr/bin/env bash
# The Helm chart charts/yao-sandbox on the real plane: it lints clean (also --strict); its
# CRD is crd/sandbox.yaml byte for byte; rendered with default values it holds the same
# RBAC rules, bindings, CRD and a comparable Deployment as manifests/ (one source of
# truth, two ways to install); its output passes a server-side dry run; a release
# installs, upgrades (a changed value reaches the Deployment) and uninstalls; the real
# controller, running with the chart's ServiceAccount token, brings a Sandbox to Running in
# cluster-wide and in namespaced mode without one Forbidden; the client roles let an editor
# create and exec into a Sandbox and a viewer only read, and are aggregated into the
# built-in edit/admin/view roles. With shards: 1 it renders as before; with shards: S one
# Deployment per shard with disjoint selectors; a shards=2 release runs one controller per
# Deployment (its own args), each holding its own Lease, and brings Sandboxes of users of both
# shards to Running; the README's steps take it to 3 shards, relabelling in place.
#
# The release is "yao-sandbox-helm" in namespace yao-sandbox-helm, so that it does not
# collide with the plain manifests (yao-sandbox-system) that the other suites install:
# its cluster-scoped objects are named yao-sandbox-helm-*, and are compared with the
# manifests' yao-sandbox-* by suffix.
. "$(dirname "$0")/lib.sh"
CHART=$SRC_DIR/charts/yao-sandbox
REL=yao-sandbox-helm   # release name, and the namespace it is installed in
RNS=yao-sandbox-helm
NS=yao-it-2            # where the Sandboxes of this suite live
LOG=$BUILD_DIR/test-helm.log
: > "$LOG"
BIN=$BUILD_DIR/bin/yao-sandbox-controller
[ -x "$BIN" ] || { echo "no controller binary at $BIN (set YAO_BUILD_DIR)" >&2; exit 1; }
HELM=$(cached_bin helm)
[ -x "$HELM" ] || "$SRC_DIR/tests/cluster/build" helm >&2 || { echo "cannot build helm" >&2; exit 1; }

T=$(mktemp -d)
on_exit "rm -rf $T"
# Keep helm's own config, cache and repositories out of the user's home.
export HELM_CONFIG_HOME=$T/helm/config HELM_CACHE_HOME=$T/helm/cache HELM_DATA_HOME=$T/helm/data
# install, upgrade and uninstall print their notes: keep the output to the results.
helm() {
    case $1 in
        install | upgrade | uninstall) local out; out=$("$HELM" "$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; } ;;
        *) "$HELM" "$@" ;;
    esac
}

# python3's stdlib has no YAML parser: kubectl turns YAML into JSON (client side), and
# objs.py reads the JSON stream. `objs.py names F`: KIND/NAME per object, sorted.
# `objs.py same A B KIND/NAME [KIND/NAME_IN_B]`: the comparable view of one object in A
# equals that of one object in B (prints both on mismatch). `objs.py get F KIND/NAME EXPR`:
# evaluate a Python expression over the object `o` (helpers: args, env, c = container 0).
cat > "$T/objs.py" <<'PY'
import json, sys

def load(path):
    s, dec, i, out = open(path).read(), json.JSONDecoder(), 0, []
    while True:
        while i < len(s) and s[i].isspace():
            i += 1
        if i >= len(s):
            return out
        o, i = dec.raw_decode(s, i)
        out.extend(o.get("items", []) if o.get("kind") == "List" else [o])

def find(objs, ref):
    kind, name = ref.split("/", 1)
    hits = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    if len(hits) != 1:
        sys.exit(f"{ref}: {len(hits)} objects")
    return hits[0]

def rules(rs):
    return sorted((json.dumps({k: sorted(v) if isinstance(v, list) else v for k, v in r.items()},
                              sort_keys=True) for r in rs or []))

def container(c):
    keep = ["name", "image", "imagePullPolicy", "ports", "livenessProbe", "readinessProbe",
            "resources", "securityContext"]
    v = {k: c.get(k) for k in keep}
    v["args"] = sorted(c.get("args", []))
    v["env"] = sorted(c.get("env", []), key=lambda e: e["name"])
    return v

def view(o):
    k, m = o["kind"], o["metadata"]
    if k in ("ClusterRole", "Role"):
        agg = {l: v for l, v in m.get("labels", {}).items() if l.startswith("rbac.authorization.k8s.io/aggregate")}
        return {"rules": rules(o.get("rules")), "aggregate": agg}
    if k in ("ClusterRoleBinding", "RoleBinding"):
        return {"roleRef": o["roleRef"], "subjects": o["subjects"], "namespace": m.get("namespace")}
    if k == "CustomResourceDefinition":
        return {"spec": o["spec"], "labels": m.get("labels")}
    if k == "SandboxClass":
        return {"spec": o["spec"], "annotations": m.get("annotations")}
    if k == "ServiceAccount":
        return {"namespace": m.get("namespace")}
    if k == "Service":
        return {"namespace": m.get("namespace"), "type": o["spec"].get("type"), "ports": o["spec"]["ports"],
                "selector": o["spec"].get("selector")}
    if k == "Deployment":
        p = o["spec"]["template"]["spec"]
        # the selector is immutable: equal, so that Helm can adopt a kubectl install; the
        # pod labels it selects must be on the pods of both
        sel = o["spec"]["selector"]["matchLabels"]
        tl = o["spec"]["template"]["metadata"].get("labels", {})
        return {"namespace": m.get("namespace"), "replicas": o["spec"].get("replicas"),
                "selector": o["spec"]["selector"], "template-labels": {l: tl.get(l) for l in sel},
                "serviceAccountName": p.get("serviceAccountName"), "securityContext": p.get("securityContext"),
                "containers": [container(c) for c in p["containers"]]}
    return {"namespace": m.get("namespace")}

cmd = sys.argv[1]
if cmd == "names":
    print("\n".join(sorted(f'{o["kind"]}/{o["metadata"]["name"]}' for o in load(sys.argv[2]))))
elif cmd == "same":
    a = view(find(load(sys.argv[2]), sys.argv[4]))
    b = view(find(load(sys.argv[3]), sys.argv[5] if len(sys.argv) > 5 else sys.argv[4]))
    if a != b:
        print("    chart:     " + json.dumps(a, sort_keys=True), file=sys.stderr)
        print("    manifests: " + json.dumps(b, sort_keys=True), file=sys.stderr)
        sys.exit(1)
elif cmd == "get":
    objs = load(sys.argv[2])
    o = find(objs, sys.argv[3]) if sys.argv[3] != "-" else None
    kinds = sorted(f'{x["kind"]}/{x["metadata"]["name"]}' for x in objs)
    o = o or {}
    c = o.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0]
    args = " ".join(c.get("args", []))
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}
    r = eval(sys.argv[4])
    print(json.dumps(r, sort_keys=True) if not isinstance(r, str) else r)
elif cmd == "eval":
    # `objs.py eval F CODE [EXTRA...]`: run CODE over all objects `objs` (the arguments after
    # it in `extra`); its last line is an expression, printed as JSON.
    g = {"objs": load(sys.argv[2]), "extra": sys.argv[4:], "json": json, "sys": sys}
    *stmts, last = sys.argv[3].strip().split("\n")
    exec("\n".join(stmts), g)
    r = eval(last, g)
    print(json.dumps(r, sort_keys=True) if not isinstance(r, str) else r)
PY
objs() { python3 "$T/objs.py" "$@"; }
# to_json YAML_FILE_OR_DIR OUT — the objects as a JSON stream.
to_json() { kubectl create --dry-run=client -o json -f "$1" > "$2"; }
# render OUT [helm template args...] — render the chart as release yao-sandbox in
# yao-sandbox-system (the names of manifests/) to OUT.yaml and OUT.json, for the plane's
# Kubernetes version (a helm built from source assumes 1.20, below the chart's kubeVersion).
KUBE_VERSION=${K8S_VERSION#v}
render() {
    local out=$1; shift
    helm template yao-sandbox "$CHART" --namespace yao-sandbox-system --kube-version "$KUBE_VERSION" "$@" > "$out.yaml" &&
        to_json "$out.yaml" "$out.json"
}
has_no() { ! grep -q -- "$2" <<<"$1" || { echo "    [$1] contains [$2]" >&2; return 1; }; }

# --- the chart on its own -----------------------------------------------------------------
check "chart CRD is crd/sandbox.yaml, byte for byte" cmp "$SRC_DIR/crd/sandbox.yaml" "$CHART/crds/sandbox.yaml"
check "chart CRD is crd/sandboxclass.yaml, byte for byte" cmp "$SRC_DIR/crd/sandboxclass.yaml" "$CHART/crds/sandboxclass.yaml"
lint_clean() { local out; out=$(helm lint "$@" 2>&1) || { echo "$out" >&2; return 1; }; has_no "$out" "\[WARNING\]\|\[ERROR\]"; }
check "helm lint is clean" lint_clean "$CHART"
check "helm lint --strict is clean" lint_clean --strict "$CHART"
check "helm lint --strict is clean in namespaced mode" lint_clean --strict "$CHART" --set "watchNamespaces={team-a}" --set replicas=2

# Default values, release "yao-sandbox" in yao-sandbox-system: the objects of manifests/.
# kubectl turns a SandboxClass into JSON only with its CRD on the server.
kubectl apply -f "$SRC_DIR/crd/" >/dev/null &&
    kubectl wait --for=condition=Established crd/sandboxclasses.sandbox.yaoapps.com --timeout=30s >/dev/null
render "$T/default" --include-crds
# What install_manifests applies: crd/ and manifests/, and the default SandboxClass
# (manifests/classes/, applied once the CRD is Established).
{ sep=; for f in "$SRC_DIR"/crd/*.yaml "$SRC_DIR"/manifests/*.yaml "$SRC_DIR"/manifests/classes/*.yaml; do
      [ -n "$sep" ] && echo ---; sep=1; cat "$f"; done; } > "$T/manifests.yaml"
to_json "$T/manifests.yaml" "$T/manifests.json"
# (the chart adds its `helm test` hook pod, which is no part of an install)
check "chart renders the same objects as crd/ + manifests/ (manifests/ adds the Namespace)" \
    eq "$(objs names "$T/default.json" | grep -v '^Pod/.*-test-readyz$')" "$(objs names "$T/manifests.json" | grep -v '^Namespace/')"
for ref in $(objs names "$T/default.json" | grep -v '^Pod/.*-test-readyz$'); do
    check "in step with crd/ + manifests/: $ref" objs same "$T/default.json" "$T/manifests.json" "$ref"
done
check "manifests/ has the client roles yao-sandbox-editor and yao-sandbox-viewer" \
    eq "$(objs names "$T/manifests.json" | grep -c -- '^ClusterRole/yao-sandbox-editor$\|^ClusterRole/yao-sandbox-viewer$')" 2

dget() { objs get "$1.json" Deployment/"${2:-yao-sandbox-controller}" "$3"; }
check "controller runs as uid 65532, non-root, RuntimeDefault seccomp" \
    eq "$(dget "$T/default" "" '[o["spec"]["template"]["spec"]["securityContext"][k] for k in ("runAsUser","runAsNonRoot")] + [o["spec"]["template"]["spec"]["securityContext"]["seccompProfile"]["type"]]')" '[65532, true, "RuntimeDefault"]'
check "container: read-only root, no privilege escalation, drops ALL" \
    eq "$(dget "$T/default" "" '[c["securityContext"][k] for k in ("readOnlyRootFilesystem","allowPrivilegeEscalation","capabilities")]')" '[true, false, {"drop": ["ALL"]}]'
check "probes: /healthz and /readyz on the metrics port 8080" \
    eq "$(dget "$T/default" "" '[c["livenessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["path"], c["ports"][0]["containerPort"], "--metrics-addr=:8080" in args]')" '["/healthz", "/readyz", 8080, true]'
check "leader election on by default; Lease namespace from the downward API" \
    eq "$(dget "$T/default" "" '["--leader-elect" in c["args"], env["YAO_SANDBOX_LEASE_NAMESPACE"]]')" '[true, {"fieldRef": {"fieldPath": "metadata.namespace"}}]'
check "cluster-wide by default (no --namespace)" eq "$(dget "$T/default" "" '"--namespace" in args')" false

render "$T/custom" --set image.tag=1.2.3 --set logLevel=debug --set metrics.port=9090 \
    --set sandboxDefaults.storageClass=fast --set sandboxDefaults.max=7 --set sandboxDefaults.memory=1Gi \
    --set 'extraEnv[0].name=YAO_SANDBOX_WORKERS' --set 'extraEnv[0].value=8' \
    --set nodeSelector.pool=system --set 'tolerations[0].key=dedicated' --set 'tolerations[0].operator=Exists' \
    --set podAnnotations.team=ai --set leaderElection.enabled=false
check "values reach the Deployment (image, log level, port, YAO_SANDBOX_*, extraEnv, scheduling, annotations)" \
    eq "$(dget "$T/custom" "" '[c["image"], args, c["ports"][0]["containerPort"], env["YAO_SANDBOX_STORAGE_CLASS"], env["YAO_SANDBOX_MAX"], env["YAO_SANDBOX_MEMORY"], env["YAO_SANDBOX_WORKERS"], o["spec"]["template"]["spec"]["nodeSelector"], o["spec"]["template"]["spec"]["tolerations"][0]["key"], o["spec"]["template"]["metadata"]["annotations"]]')" \
    '["yao-sandbox/controller:1.2.3", "--log-level=debug --metrics-addr=:9090", 9090, "fast", "7", "1Gi", "8", {"pool": "system"}, "dedicated", {"team": "ai"}]'
check "metrics Service follows metrics.port" eq "$(objs get "$T/custom.json" Service/yao-sandbox-controller-metrics 'o["spec"]["ports"][0]["port"]')" 9090
check "leaderElection.enabled=false, 1 replica: no --leader-elect, no leader-election Role" \
    eq "$(objs names "$T/custom.json" | grep -c leader-election)" 0
render "$T/replicas" --set leaderElection.enabled=false --set replicas=3
check "more than one replica forces --leader-elect" eq "$(dget "$T/replicas" "" '[o["spec"]["replicas"], "--leader-elect" in c["args"]]')" '[3, true]'

render "$T/nsmode" --set "watchNamespaces={team-a}"
check "namespaced mode: Role and RoleBinding in the watched namespace; cluster-wide only the cluster-scoped reads" \
    eq "$(objs names "$T/nsmode.json" | grep -v -- '-editor$\|-viewer$' | grep 'Role')" \
    "$(printf '%s\n' ClusterRole/yao-sandbox-controller-cluster-reads ClusterRoleBinding/yao-sandbox-controller-cluster-reads Role/yao-sandbox-controller Role/yao-sandbox-leader-election RoleBinding/yao-sandbox-controller RoleBinding/yao-sandbox-leader-election)"
check "  the cluster reads: list and watch of SandboxClasses, StorageClasses and Namespaces, nothing else" \
    eq "$(objs get "$T/nsmode.json" ClusterRole/yao-sandbox-controller-cluster-reads 'sorted((r["resources"][0], r["verbs"]) for r in o["rules"])')" \
    '[["namespaces", ["list", "watch"]], ["sandboxclasses", ["list", "watch"]], ["storageclasses", ["list", "watch"]]]'

check "namespaced mode: the Role in team-a has the ClusterRole's rules" \
    objs same "$T/nsmode.json" "$T/manifests.json" Role/yao-sandbox-controller ClusterRole/yao-sandbox-controller
check "namespaced mode: Role in team-a, bound to the SA of the release namespace" \
    eq "$(objs get "$T/nsmode.json" RoleBinding/yao-sandbox-controller '[o["metadata"]["namespace"], o["subjects"][0]["namespace"]]' | tr -d '\n')" '["team-a", "yao-sandbox-system"]'
check "namespaced mode: controller started with --namespace=team-a" eq "$(dget "$T/nsmode" "" '"--namespace=team-a" in c["args"]')" true
two=$(helm template x "$CHART" --kube-version "$KUBE_VERSION" --set "watchNamespaces={a,b}" 2>&1)
check "two watchNamespaces are refused with an explanation" contains "$two" "watches one namespace or all of them, got 2 (a, b)"


# --- packaging: versions, schema, image, RBAC/SA toggles, availability, monitoring ------------
check "CRD carries its release (app.kubernetes.io/version) = the chart's appVersion" \
    eq "$(objs get "$T/default.json" CustomResourceDefinition/sandboxes.sandbox.yaoapps.com 'o["metadata"]["labels"]["app.kubernetes.io/version"]')" \
    "$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' "$CHART/Chart.yaml")"
check "Chart.yaml declares kubeVersion >=1.28 (the CRD's rules use fieldPath)" grep -qx 'kubeVersion: ">=1.28.0-0"' "$CHART/Chart.yaml"
old=$(helm template x "$CHART" --kube-version 1.27.9 2>&1)
check "rendering for Kubernetes 1.27 is refused" contains "$old" "requires kubeVersion: >=1.28.0-0"
refused() { local out; out=$(helm template x "$CHART" --kube-version "$KUBE_VERSION" "${@:2}" 2>&1) && { echo "    rendered" >&2; return 1; }; contains "$out" "$1"; }
check "schema: an unknown top-level key is refused (--set replicaCount=3)" refused "Additional property replicaCount is not allowed" --set replicaCount=3
check "schema: an unknown nested key is refused (image.tags)" refused "Additional property tags is not allowed" --set image.tags=1
check "schema: ...also in the pod security context (runAsUsr)" refused "Additional property runAsUsr is not allowed" --set podSecurityContext.runAsUsr=1
check "schema: ...and in metrics.serviceMonitor" refused "Additional property intervall is not allowed" --set metrics.serviceMonitor.intervall=1m
check "schema: a digest must be sha256:<64 hex>" refused "image.digest" --set image.digest=latest
check "schema: sandboxDefaults.runAsUser is a uid or auto" refused "sandboxDefaults.runAsUser" --set sandboxDefaults.runAsUser=0
check "schema: extraArgs are flags" refused "extraArgs.0" --set 'extraArgs={workers}'
yes_rel() { helm template yes "$CHART" --kube-version "$KUBE_VERSION" | kubectl create --dry-run=client -f - >/dev/null; }
check "a release named like a YAML boolean (yes) renders string labels" yes_rel
check "every object level of the schema refuses unknown keys" python3 -c '
import json, sys
bad = []
def walk(s, path):
    if s.get("type") == "object" and "properties" in s and s.get("additionalProperties") is not False:
        bad.append(path or "(root)")
    for k, v in s.get("properties", {}).items():
        walk(v, path + "." + k)
    for v in s.get("anyOf", []):
        walk(v, path)
walk(json.load(open(sys.argv[1])), "")
print("    open:", bad, file=sys.stderr) if bad else None
sys.exit(1 if bad else 0)' "$CHART/values.schema.json"

render "$T/img" --set image.registry=registry.example.com:5000/ --set image.tag=9.9
check "image.registry prefixes the repository" eq "$(dget "$T/img" "" 'c["image"]')" "registry.example.com:5000/yao-sandbox/controller:9.9"
check "  and the sandbox image comes from the same registry and tag (sandboxDefaults.image unset)" \
    eq "$(dget "$T/img" "" 'env["YAO_SANDBOX_IMAGE"]')" "registry.example.com:5000/yao-sandbox/sandbox:9.9"
render "$T/sbimg" --set image.registry=registry.example.com:5000 --set sandboxDefaults.image=mirror.example/sb:3
check "sandboxDefaults.image, when set, is the sandbox image as is" eq "$(dget "$T/sbimg" "" 'env["YAO_SANDBOX_IMAGE"]')" "mirror.example/sb:3"
render "$T/hosts" --set 'watchNamespaces={team-a}' --set 'sandboxClass.serverNamespaces={yao}' \
    --set-json 'sandboxClass.hostAliases=[{"hostnames":["host.tai.internal"],"service":{"namespace":"yao-gw","name":"yao"}}]'
check "sandboxClass.hostAliases reach the class's spec.hostAliases" eq \
    "$(objs get "$T/hosts.json" SandboxClass/default 'o["spec"]["hostAliases"]')" '[{"hostnames": ["host.tai.internal"], "service": {"name": "yao", "namespace": "yao-gw"}}]'
check "  namespaced: a Role to get Services in yao and yao-gw (serverNamespaces, the Services named)" eq \
    "$(objs names "$T/hosts.json" | grep read-services | tr '\n' ' ')" "Role/yao-sandbox-read-services Role/yao-sandbox-read-services RoleBinding/yao-sandbox-read-services RoleBinding/yao-sandbox-read-services "
DIGEST=sha256:$(printf '%064d' 7)
render "$T/digest" --set image.registry=ghcr.io --set image.tag=9.9 --set image.digest=$DIGEST
check "image.digest renders repo@sha256:… (and the tag is ignored)" eq "$(dget "$T/digest" "" 'c["image"]')" "ghcr.io/yao-sandbox/controller@$DIGEST"

render "$T/norbac" --set rbac.create=false --set serviceAccount.create=false --set serviceAccount.name=platform-sa
check "rbac.create=false: no controller Role/ClusterRole or binding (client roles stay)" \
    eq "$(objs names "$T/norbac.json" | grep 'Role' | tr '\n' ' ')" "ClusterRole/yao-sandbox-editor ClusterRole/yao-sandbox-viewer "
check "serviceAccount.create=false: no ServiceAccount; the pod runs as serviceAccount.name" \
    eq "$(objs names "$T/norbac.json" | grep -c '^ServiceAccount/')/$(dget "$T/norbac" "" 'o["spec"]["template"]["spec"]["serviceAccountName"]')" "0/platform-sa"
render "$T/ownsa" --set serviceAccount.name=platform-sa
check "serviceAccount.name: the ServiceAccount and every binding's subject use it" \
    eq "$(objs names "$T/ownsa.json" | grep '^ServiceAccount/')|$(objs get "$T/ownsa.json" ClusterRoleBinding/yao-sandbox-controller 'o["subjects"][0]["name"]')|$(objs get "$T/ownsa.json" RoleBinding/yao-sandbox-leader-election 'o["subjects"][0]["name"]')" \
    "ServiceAccount/platform-sa|platform-sa|platform-sa"

check "one replica: no PodDisruptionBudget (it would block every drain)" eq "$(objs names "$T/default.json" | grep -c PodDisruptionBudget)" 0
render "$T/ha" --set replicas=3 --set 'topologySpreadConstraints[0].maxSkew=1' \
    --set 'topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname' --set 'topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway'
check "replicas > 1: a PodDisruptionBudget (minAvailable 1) selecting the controller pods" \
    eq "$(objs get "$T/ha.json" PodDisruptionBudget/yao-sandbox-controller '[o["spec"].get("minAvailable"), o["spec"].get("maxUnavailable"), o["spec"]["selector"]["matchLabels"]]')" \
    "$(dget "$T/default" "" '[1, None, o["spec"]["selector"]["matchLabels"]]')"
render "$T/ha2" --set replicas=3 --set podDisruptionBudget.minAvailable= --set podDisruptionBudget.maxUnavailable=1
check "podDisruptionBudget.maxUnavailable instead of minAvailable" \
    eq "$(objs get "$T/ha2.json" PodDisruptionBudget/yao-sandbox-controller '[o["spec"].get("minAvailable"), o["spec"].get("maxUnavailable")]')" "[null, 1]"
check "both minAvailable and maxUnavailable are refused" refused "not both" --set replicas=2 --set podDisruptionBudget.maxUnavailable=1
check "topologySpreadConstraints: an entry without labelSelector gets the controller selector" \
    eq "$(dget "$T/ha" "" 'o["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"] == o["spec"]["selector"]["matchLabels"]')" true

render "$T/args" --set 'extraArgs={--workers=8,--resync=5m}' --set 'watchNamespaces={team-a}'
check "extraArgs come after the chart's flags" \
    eq "$(dget "$T/args" "" 'c["args"][-3:]')" '["--namespace=team-a", "--workers=8", "--resync=5m"]'

# --- shards: one Deployment per shard -------------------------------------------------------
render "$T/shards1" --include-crds --set shards=1
check "shards=1 renders byte for byte what the defaults render" cmp "$T/default.yaml" "$T/shards1.yaml"
check "unsharded: one Deployment, no --shards/--shard, no shard label, no YAO_SANDBOX_SHARD*" \
    eq "$(objs names "$T/default.json" | grep '^Deployment/')|$(dget "$T/default" "" '[a for a in c["args"] if a.startswith("--shard")] + [e for e in env if e.startswith("YAO_SANDBOX_SHARD")] + [l for l in o["spec"]["template"]["metadata"]["labels"] if "shard" in l]')" \
    "Deployment/yao-sandbox-controller|[]"
render "$T/shards3" --set shards=3 --set replicas=2 --set 'extraArgs={--workers=8}' \
    --set metrics.podMonitor.enabled=true --set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true \
    --set 'topologySpreadConstraints[0].maxSkew=1' --set 'topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname' \
    --set 'topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway'
# kubectl cannot turn the Prometheus Operator's kinds into JSON without their CRDs: python's yaml
python3 - "$T/shards3.yaml" > "$T/shards3.json" <<'PY2'
import json, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d: print(json.dumps(d))
PY2
D3=(Deployment/yao-sandbox-controller-shard-0 Deployment/yao-sandbox-controller-shard-1 Deployment/yao-sandbox-controller-shard-2)
check "shards=3: three Deployments <controller>-shard-0/1/2 and no unsharded one" \
    eq "$(objs names "$T/shards3.json" | grep '^Deployment/' | tr '\n' ' ')" "${D3[*]} "
s3() { objs eval "$T/shards3.json" "$@"; }
check "shards=3: each Deployment runs --shards=3 and its own --shard=I (0, 1, 2), then extraArgs" \
    eq "$(s3 '[[a for a in x["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("--shard") or a == "--workers=8"] for x in objs if x["kind"] == "Deployment"]')" \
    '[["--shards=3", "--shard=0", "--workers=8"], ["--shards=3", "--shard=1", "--workers=8"], ["--shards=3", "--shard=2", "--workers=8"]]'
check "shards=3: replicas=2 in each shard, leader election on, the Lease name the controller suffixes with -shard-I" \
    eq "$(s3 '[[x["spec"]["replicas"], [a for a in x["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("--lease-name") or a == "--leader-elect"]] for x in objs if x["kind"] == "Deployment"]' | tr -d '\n')" \
    "$(printf '[2, ["--leader-elect", "--lease-name=yao-sandbox-controller"]], %.0s' 1 2 3 | sed 's/^/[/; s/, $/]/')"
# selects LABELS SELECTOR: matchLabels all present in labels
SELECTS='(lambda labels, sel: all(labels.get(k) == v for k, v in sel["matchLabels"].items()))'
DEPS='[x for x in objs if x["kind"] == "Deployment"]'
check "shards=3: each Deployment selects its own pods and no other shard's (selectors do not overlap)" \
    eq "$(s3 '[['"$SELECTS"'(b["spec"]["template"]["metadata"]["labels"], a["spec"]["selector"]) for b in '"$DEPS"'] for a in '"$DEPS"']' | tr -d '\n')" \
    '[[true, false, false], [false, true, false], [false, false, true]]'
check "shards=3: the shard is in the selector as sandbox.yaoapps.com/shard" \
    eq "$(s3 '[x["spec"]["selector"]["matchLabels"].get("sandbox.yaoapps.com/shard") for x in '"$DEPS"']')" '["0", "1", "2"]'
check "shards=3: one PodDisruptionBudget per shard, with its Deployment's selector" \
    eq "$(s3 '[(p["metadata"]["name"], p["spec"]["selector"] == d["spec"]["selector"], p["spec"]["minAvailable"]) for p in objs if p["kind"] == "PodDisruptionBudget" for d in '"$DEPS"' if d["metadata"]["name"] == p["metadata"]["name"]]' | tr -d '\n')" \
    '[["yao-sandbox-controller-shard-0", true, 1], ["yao-sandbox-controller-shard-1", true, 1], ["yao-sandbox-controller-shard-2", true, 1]]'
check "shards=3: the metrics Service and the PodMonitor select every shard's pods, the ServiceMonitor the Service" \
    eq "$(s3 'svc = [x for x in objs if x["kind"] == "Service"][0]; pm = [x for x in objs if x["kind"] == "PodMonitor"][0]; sm = [x for x in objs if x["kind"] == "ServiceMonitor"][0]
[all('"$SELECTS"'(d["spec"]["template"]["metadata"]["labels"], {"matchLabels": svc["spec"]["selector"]}) and '"$SELECTS"'(d["spec"]["template"]["metadata"]["labels"], pm["spec"]["selector"]) for d in '"$DEPS"'), '"$SELECTS"'(svc["metadata"]["labels"], sm["spec"]["selector"])]' 2>&1)" \
    '[true, true]'
check "shards=3: a topologySpreadConstraint without labelSelector spreads its own shard's pods" \
    eq "$(s3 '[d["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["labelSelector"] == d["spec"]["selector"] for d in '"$DEPS"']')" '[true, true, true]'
# Everything but the shard (name, label, two flags) is the unsharded Deployment's.
unshard='(lambda d: json.loads(json.dumps(d).replace("-shard-0", "").replace("-shard-1", "").replace("-shard-2", "").replace(", \"sandbox.yaoapps.com/shard\": \"0\"", "").replace(", \"sandbox.yaoapps.com/shard\": \"1\"", "").replace(", \"sandbox.yaoapps.com/shard\": \"2\"", "").replace(", \"--shards=3\", \"--shard=0\"", "").replace(", \"--shards=3\", \"--shard=1\"", "").replace(", \"--shards=3\", \"--shard=2\"", "")))'
render "$T/shards3ref" --set replicas=2 --set 'extraArgs={--workers=8}' \
    --set 'topologySpreadConstraints[0].maxSkew=1' --set 'topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname' \
    --set 'topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway'
REF=$(objs get "$T/shards3ref.json" Deployment/yao-sandbox-controller 'json.dumps(o, sort_keys=True)')
check "shards=3: but for the shard, each Deployment is the unsharded one (env, image, security, probes, scheduling)" \
    eq "$(s3 '[json.dumps('"$unshard"'(d), sort_keys=True) == json.dumps(json.loads(extra[0]), sort_keys=True) for d in '"$DEPS"']' "$REF")" '[true, true, true]'
check "the controller accepts each rendered shard's flags (and refuses a shard beyond them)" eval \
    '"$BIN" --kubeconfig /nonexistent --shards=3 --shard=0 --version >/dev/null && "$BIN" --kubeconfig /nonexistent --shards=3 --shard=2 --version >/dev/null &&
     ! "$BIN" --kubeconfig /nonexistent --shards=3 --shard=3 --version >/dev/null 2>&1'
check "shards=3: NoLeader alerts while fewer than 3 shards have a leader, the shard read from the pod name" \
    eq "$(s3 'import re
e = [r for x in objs if x["kind"] == "PrometheusRule" for r in x["spec"]["groups"][0]["rules"] if r["alert"] == "YaoSandboxNoLeader"][0]["expr"]
rx = re.search(r"\"pod\", \"([^\"]+)\"", e).group(1)
[e.endswith(" < 3"), "count by (shard)" in e, [re.fullmatch(rx, p).group(1) for p in ("yao-sandbox-controller-shard-0-5d8f9c7b6-abcde", "yao-sandbox-controller-shard-2-5d8f9c7b6-x1y2z")], re.fullmatch(rx, "yao-sandbox-controller-5d8f9c7b6-abcde")]')" \
    '[true, true, ["0", "2"], null]'
# The longest name the alert allows: a pod name as Kubernetes makes it (the first 58
# characters of "<replicaset>-", then 5 random ones) still gives the shard.
F38=abcdefghijabcdefghijabcdefghijabcdefgh
helm template yao-sandbox "$CHART" --kube-version "$KUBE_VERSION" --set fullnameOverride=$F38 --set shards=3 \
    --set metrics.prometheusRule.enabled=true --show-only templates/prometheusrule.yaml > "$T/rule38.yaml"
check "shards=3, a 38-character fullname: the alert reads the shard from pod names cut at 58 characters" \
    eq "$(python3 - "$T/rule38.yaml" "$F38-controller-shard-2-5d8f9c7b6b-" <<'PY2'
import re, sys, yaml
e = [r for r in yaml.safe_load(open(sys.argv[1]))["spec"]["groups"][0]["rules"] if r["alert"] == "YaoSandboxNoLeader"][0]["expr"]
rx = re.search(r'"pod", "([^"]+)"', e).group(1)
m = re.fullmatch(rx, sys.argv[2][:58] + "x1y2z")
print(m.group(1) if m else None)
PY2
)" 2
check "...and a longer one is refused with the length that fits" refused "fullnameOverride of at most 38 characters" \
    --set fullnameOverride=${F38}ij --set shards=3 --set metrics.prometheusRule.enabled=true
check "helm lint --strict is clean with shards=3" lint_clean --strict "$CHART" --set shards=3 --set replicas=2
check "shards: --shards in extraArgs is refused (the chart sets it per Deployment)" refused '"--shards=2" is set by the chart: use the value shards' --set 'extraArgs={--shards=2}'
check "shards: --shard in extraArgs is refused with shards=3 too" refused '"--shard=1" is set by the chart' --set shards=3 --set 'extraArgs={--workers=2,--shard=1}'
check "shards: YAO_SANDBOX_SHARDS in extraEnv is refused" refused 'extraEnv: YAO_SANDBOX_SHARDS is set by the chart' --set 'extraEnv[0].name=YAO_SANDBOX_SHARDS' --set 'extraEnv[0].value=2'
check "schema: shards is at least 1" refused "shards: Must be greater than or equal to 1" --set shards=0

check "sandbox pods run as uid 1000 by default (YAO_SANDBOX_RUN_AS_USER), no pull secrets" \
    eq "$(dget "$T/default" "" '[env["YAO_SANDBOX_RUN_AS_USER"], "YAO_SANDBOX_IMAGE_PULL_SECRETS" in env]')" '["1000", false]'
render "$T/openshift" --set sandboxDefaults.runAsUser=auto --set 'sandboxDefaults.imagePullSecrets={regcred,mirror}'
check "sandboxDefaults.runAsUser=auto and imagePullSecrets reach the controller's environment" \
    eq "$(dget "$T/openshift" "" '[env["YAO_SANDBOX_RUN_AS_USER"], env["YAO_SANDBOX_IMAGE_PULL_SECRETS"]]')" '["auto", "regcred,mirror"]'
render "$T/secrets" --set 'sandboxDefaults.allowedSecrets={yao-token,db-ro}'
check "sandboxDefaults.allowedSecrets reach the controller (YAO_SANDBOX_ALLOWED_SECRETS); none by default" \
    eq "$(dget "$T/secrets" "" 'env["YAO_SANDBOX_ALLOWED_SECRETS"]')|$(dget "$T/default" "" '"YAO_SANDBOX_ALLOWED_SECRETS" in env')" 'yao-token,db-ro|false'
check "schema: an allowed secret must be a Secret's name" refused "allowedSecrets" --set 'sandboxDefaults.allowedSecrets={../x}'
check "the controller accepts the rendered variables (and refuses a bad one)" eval \
    'YAO_SANDBOX_RUN_AS_USER=auto YAO_SANDBOX_IMAGE_PULL_SECRETS=regcred,mirror YAO_SANDBOX_ALLOWED_SECRETS=yao-token,db-ro "$BIN" --kubeconfig /nonexistent --version >/dev/null &&
     ! YAO_SANDBOX_RUN_AS_USER=root "$BIN" --version >/dev/null 2>&1'

check "monitoring objects are off by default" eq "$(objs names "$T/default.json" | grep -c 'Monitor\|PrometheusRule')" 0
# The Prometheus Operator's CRDs are not on this plane: the objects are checked as rendered.
helm template yao-sandbox "$CHART" --namespace yao-sandbox-system --kube-version "$KUBE_VERSION" \
    --set metrics.serviceMonitor.enabled=true --set metrics.serviceMonitor.labels.release=kube-prom \
    --set metrics.serviceMonitor.interval=15s --set metrics.podMonitor.enabled=true \
    --set metrics.prometheusRule.enabled=true --set metrics.prometheusRule.additionalAlertLabels.team=ai \
    > "$T/mon.yaml"
python3 - "$T/mon.yaml" > "$T/mon.json" <<'PY'
import json, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d: print(json.dumps(d))
PY
mon() { objs get "$T/mon.json" "$1" "$2"; }
SEL=$(dget "$T/default" "" 'o["spec"]["selector"]["matchLabels"]')
check "ServiceMonitor: monitoring.coreos.com/v1, the metrics Service's labels, port metrics /metrics every 15s, extra label" \
    eq "$(mon ServiceMonitor/yao-sandbox-controller '[o["apiVersion"], o["spec"]["selector"]["matchLabels"], o["spec"]["namespaceSelector"], o["spec"]["endpoints"][0], o["metadata"]["labels"]["release"]]')" \
    "[\"monitoring.coreos.com/v1\", $SEL, {\"matchNames\": [\"yao-sandbox-system\"]}, {\"interval\": \"15s\", \"path\": \"/metrics\", \"port\": \"metrics\", \"scrapeTimeout\": \"10s\"}, \"kube-prom\"]"
check "...and the metrics Service carries the labels it selects" \
    eq "$(objs get "$T/default.json" Service/yao-sandbox-controller-metrics 'all(o["metadata"]["labels"].get(k) == v for k, v in '"$SEL"'.items())')" true
check "...and names the Service's port" eq "$(objs get "$T/default.json" Service/yao-sandbox-controller-metrics 'o["spec"]["ports"][0]["name"]')" metrics
check "PodMonitor: the controller pods' selector, the container port metrics" \
    eq "$(mon PodMonitor/yao-sandbox-controller '[o["spec"]["selector"]["matchLabels"], o["spec"]["podMetricsEndpoints"][0]["port"]]')/$(dget "$T/default" "" 'c["ports"][0]["name"]')" "[$SEL, \"metrics\"]/metrics"
check "PrometheusRule: three alerts on metrics the controller exports, with the extra label" \
    eq "$(mon PrometheusRule/yao-sandbox-controller '[(r["alert"], r["labels"]["team"]) for r in o["spec"]["groups"][0]["rules"]]')" \
    '[["YaoSandboxNoLeader", "ai"], ["YaoSandboxReconcileErrors", "ai"], ["YaoSandboxWorkQueueBacklog", "ai"]]'
exported() {
    local m; for m in $(mon PrometheusRule/yao-sandbox-controller '" ".join(sorted(set(__import__("re").findall(r"yao_sandbox_[a-z_]+", " ".join(r["expr"] for r in o["spec"]["groups"][0]["rules"])))))'); do
        # (the family names are string literals of the binary: a whole word, not a prefix)
        grep -qaw -- "$m" "$BIN" || { echo "    $m is not a metric of the controller" >&2; return 1; }
    done
}
check "...every metric an alert uses is one the controller exports" exported
check "a ServiceMonitor without the metrics Service is refused" refused "needs metrics.service.enabled" \
    --set metrics.serviceMonitor.enabled=true --set metrics.service.enabled=false

check "helm test hook: a pod that wgets /readyz through the metrics Service" \
    eq "$(objs get "$T/default.json" Pod/yao-sandbox-controller-test-readyz '[o["metadata"]["annotations"]["helm.sh/hook"], o["spec"]["restartPolicy"], o["spec"]["containers"][0]["command"][0], o["spec"]["containers"][0]["command"][-1]]')" \
    '["test", "Never", "wget", "http://yao-sandbox-controller-metrics.yao-sandbox-system.svc:8080/readyz"]'

# --- against the API server -----------------------------------------------------------------
# Leftovers of an interrupted run (the release's cluster-scoped objects outlive its namespace).
helm uninstall $REL -n $RNS --wait >/dev/null 2>&1
kubectl delete clusterrole,clusterrolebinding -l app.kubernetes.io/instance=$REL --ignore-not-found >/dev/null
fresh_namespace $RNS
fresh_namespace $NS
dry_run() { helm template $REL "$CHART" --namespace $RNS --kube-version "$KUBE_VERSION" "$@" | kubectl apply --dry-run=server -f - >/dev/null; }
check "helm template | kubectl apply --dry-run=server (default values, with the CRD)" dry_run --include-crds
check "helm template | kubectl apply --dry-run=server (namespaced mode)" dry_run --set "watchNamespaces={$NS}"
check "helm template | kubectl apply --dry-run=server (shards=3, replicas=2)" dry_run --set shards=3 --set replicas=2

on_exit "'$HELM' uninstall $REL -n $RNS --wait"
check "helm install" helm install $REL "$CHART" --namespace $RNS
check "release is deployed, revision 1" eq "$(helm status $REL -n $RNS -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["info"]["status"], d["version"])')" "deployed 1"
C=$REL-controller
check "NOTES explain how to create a first Sandbox" contains "$(helm get notes $REL -n $RNS)" "kubectl apply -n default -f -"
exists() { kubectl get "$@" >/dev/null; }
check "ServiceAccount $C" exists -n $RNS serviceaccount $C
check "ClusterRole and ClusterRoleBinding $C" exists clusterrole/$C clusterrolebinding/$C
check "leader-election Role and RoleBinding in $RNS" exists -n $RNS role/$REL-leader-election rolebinding/$REL-leader-election
check "client ClusterRoles $REL-editor and $REL-viewer" exists clusterrole/$REL-editor clusterrole/$REL-viewer
check "metrics Service" exists -n $RNS service/$C-metrics
check "Deployment $C" exists -n $RNS deployment/$C
established() { kubectl wait --for=condition=Established crd/sandboxes.sandbox.yaoapps.com --timeout=30s >/dev/null; }
check "Sandbox CRD is Established" established
pods_running() { [ "$(kubectl -n $RNS get pods -l app.kubernetes.io/instance=$REL,app.kubernetes.io/component=controller -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$')" = "$1" ]; }
# kwok plays the kubelet: the pod is scheduled and Running, but nothing runs it, and kwok
# does not run probes (they are exercised against the local controller below).
check "controller pod is scheduled and Running (kwok)" eventually 30 pods_running 1

# The documented CRD upgrade (Helm never upgrades crds/): a "newer" CRD, told apart by its
# version label, applied server-side over the installed one; then the real one again.
# Both CRDs, as the chart's README says: the directory.
crd_version() { kubectl get crd sandboxes.sandbox.yaoapps.com sandboxclasses.sandbox.yaoapps.com -o jsonpath='{range .items[*]}{.metadata.labels.app\.kubernetes\.io/version}/{end}'; }
mkdir -p "$T/crds-next"
for f in "$CHART"/crds/*.yaml; do
    sed 's/^    app.kubernetes.io\/version: ".*"$/    app.kubernetes.io\/version: "99.0.0-test"/' "$f" > "$T/crds-next/$(basename "$f")"
done
crd_apply() { kubectl apply --server-side --force-conflicts -f "$1" >/dev/null; }
check "CRD upgrade: kubectl apply --server-side --force-conflicts -f crds/ (Sandbox and SandboxClass)" crd_apply "$T/crds-next/"
check "...the cluster now runs both new CRDs (version labels)" eq "$(crd_version)" 99.0.0-test/99.0.0-test/
check "...and back to the chart's" crd_apply "$CHART/crds/"
app_version=$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' "$CHART/Chart.yaml")
check "...version labels = appVersion again" eq "$(crd_version)" "$app_version/$app_version/"

# The installed RBAC, compared with manifests/ by suffix (yao-sandbox-helm-X vs yao-sandbox-X).
kubectl get clusterrole $C $REL-editor $REL-viewer -o json > "$T/installed-cr.json"
kubectl get -n $RNS role $REL-leader-election -o json > "$T/installed-le.json"
check "installed $C rules = manifests' yao-sandbox-controller" objs same "$T/installed-cr.json" "$T/manifests.json" ClusterRole/$C ClusterRole/yao-sandbox-controller
check "installed $REL-editor rules and aggregation = manifests' yao-sandbox-editor" objs same "$T/installed-cr.json" "$T/manifests.json" ClusterRole/$REL-editor ClusterRole/yao-sandbox-editor
check "installed $REL-viewer rules and aggregation = manifests' yao-sandbox-viewer" objs same "$T/installed-cr.json" "$T/manifests.json" ClusterRole/$REL-viewer ClusterRole/yao-sandbox-viewer
check "installed leader-election Role = manifests'" objs same "$T/installed-le.json" "$T/manifests.json" Role/$REL-leader-election Role/yao-sandbox-leader-election
check "ClusterRoleBinding grants $C to the release's ServiceAccount" \
    eq "$(kubectl get clusterrolebinding $C -o jsonpath='{.roleRef.name}/{.subjects[0].kind}/{.subjects[0].namespace}/{.subjects[0].name}')" "$C/ServiceAccount/$RNS/$C"

# --- the real controller with the chart's ServiceAccount token -------------------------------
SAKC=$T/controller.kubeconfig
sa_kubeconfig "$SAKC" $C $RNS
can() { kubectl --kubeconfig "$SAKC" auth can-i "$@" 2>/dev/null; }
check "SA can list/watch Sandboxes in every namespace" eq "$(can watch sandboxes.sandbox.yaoapps.com --all-namespaces)" yes
check "SA can create pods and PVCs" eq "$(can create pods -n $NS)/$(can create persistentvolumeclaims -n $NS)" yes/yes
check "SA can update Leases in the release namespace only" eq "$(can update leases.coordination.k8s.io -n $RNS)/$(can update leases.coordination.k8s.io -n default)" yes/no
check "SA cannot read Secrets or create Sandboxes (least privilege)" eq "$(can get secrets -n $NS)/$(can create sandboxes.sandbox.yaoapps.com -n $NS)" no/no

# Like the Deployment, with a local port for /healthz /readyz /metrics and the Lease in the
# release namespace (the pod gets it from the downward API). --namespace keeps this
# controller off the Sandboxes of other suites: its rights are still the ClusterRole's.
MPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
run_controller() {
    CONTROLLER_KUBECONFIG=$SAKC YAO_SANDBOX_LEASE_NAMESPACE=$RNS start_controller "$1" \
        --namespace $NS --leader-elect --lease-name $C --metrics-addr 127.0.0.1:$MPORT --max-running 0 --log-level info "${@:2}"
}
LOG1=$T/controller-clusterwide.log
run_controller "$LOG1"
sandbox() { printf 'apiVersion: sandbox.yaoapps.com/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {userID: %s, chatID: %s}\n' "$@"; }
sandbox helm-first alice c1 | kubectl -n $NS apply -f - >/dev/null
check "Sandbox becomes Running under the chart's ClusterRole" eventually 30 phase_is $NS helm-first Running
no_denials() { local n; n=$(grep -ciE 'reconcile failed|forbidden|could not' "$1"); [ "$n" = 0 ] || { grep -iE 'reconcile failed|forbidden|could not' "$1" | head -5 >&2; return 1; }; }
check "controller log has no Forbidden / reconcile failed / could not" no_denials "$LOG1"
events_on() { [ -n "$(kubectl -n $NS get events --field-selector involvedObject.kind=Sandbox,involvedObject.name=$1 -o name)" ]; }
check "controller recorded Events on the Sandbox" eventually 10 events_on helm-first
if grep -qa '/apis/coordination.k8s.io/v1/namespaces/' "$BIN"; then
    holder() { [ -n "$(kubectl -n $RNS get lease $C -o jsonpath='{.spec.holderIdentity}')" ]; }
    check "controller holds the Lease $C in $RNS (leader-election Role)" eventually 30 holder
else
    echo "skip Lease check: this controller build has no leader election yet"
fi
if grep -qaP '/readyz\x00' "$BIN"; then
    http_ok() { curl -fsS -o /dev/null "http://127.0.0.1:$MPORT$1"; }
    check "/healthz answers 200 (liveness probe path)" eventually 10 http_ok /healthz
    check "/readyz answers 200 (readiness probe path)" eventually 20 http_ok /readyz
    check "/metrics is Prometheus text" contains "$(curl -fsS "http://127.0.0.1:$MPORT/metrics")" "# TYPE "

    # helm test: kwok runs no container, so this suite plays the kubelet: it runs the hook
    # pod's own command here, against the local controller's /readyz instead of the
    # Service, and reports its exit as the pod's phase.
    TPOD=$C-test-readyz
    helm test $REL -n $RNS --timeout 60s > "$T/helm-test.out" 2>&1 &
    HT=$!
    tpod_exists() { kubectl -n $RNS get pod $TPOD >/dev/null 2>&1; }
    check "helm test creates the hook pod" eventually 30 tpod_exists
    mapfile -t TCMD < <(kubectl -n $RNS get pod $TPOD -o jsonpath='{range .spec.containers[0].command[*]}{@}{"\n"}{end}')
    check "the hook asks the metrics Service" eq "${TCMD[-1]}" "http://$C-metrics.$RNS.svc:8080/readyz"
    run_hook() { local url=$1; "${TCMD[@]:0:${#TCMD[@]}-1}" "$url" >/dev/null 2>&1; }
    DEAD=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    check "the hook command fails when nothing answers /readyz" eval '! run_hook http://127.0.0.1:$DEAD/readyz'
    if run_hook "http://127.0.0.1:$MPORT/readyz"; then phase=Succeeded; else phase=Failed; fi
    kubectl -n $RNS patch pod $TPOD --subresource=status --type merge -p "{\"status\":{\"phase\":\"$phase\"}}" >/dev/null
    check "the hook command succeeds against the controller's /readyz" eq "$phase" Succeeded
    check "helm test reports the hook pod's success" wait $HT
    check "...as Succeeded" contains "$(cat "$T/helm-test.out")" "Phase:          Succeeded"
else
    echo "skip probe checks: this controller build serves no /healthz /readyz yet"
fi

# --- client roles -----------------------------------------------------------------------------
kubectl -n $NS create serviceaccount yao-client >/dev/null
kubectl -n $NS create rolebinding yao-client --clusterrole=$REL-editor --serviceaccount=$NS:yao-client >/dev/null
kubectl -n $NS create serviceaccount yao-viewer >/dev/null
kubectl -n $NS create rolebinding yao-viewer --clusterrole=$REL-viewer --serviceaccount=$NS:yao-viewer >/dev/null
CKC=$T/client.kubeconfig
VKC=$T/viewer.kubeconfig
sa_kubeconfig "$CKC" yao-client $NS
sa_kubeconfig "$VKC" yao-viewer $NS
ck() { kubectl --kubeconfig "$CKC" -n $NS "$@"; }
vk() { kubectl --kubeconfig "$VKC" -n $NS "$@"; }
bound() { [ "$(ck auth can-i create sandboxes.sandbox.yaoapps.com)" = yes ]; }
eventually 10 bound
check "editor creates a Sandbox with its own token" eval 'sandbox client-sb bob c1 | ck create -f - >/dev/null'
check "editor's Sandbox becomes Running" eventually 30 phase_is $NS client-sb Running
check "editor can get, patch (touch) and delete Sandboxes" \
    eq "$(ck auth can-i get sandboxes.sandbox.yaoapps.com)/$(ck auth can-i patch sandboxes.sandbox.yaoapps.com)/$(ck auth can-i delete sandboxes.sandbox.yaoapps.com)" yes/yes/yes
check "editor cannot write status, delete pods or read Secrets" \
    eq "$(ck auth can-i patch sandboxes.sandbox.yaoapps.com --subresource=status)/$(ck auth can-i delete pods)/$(ck auth can-i get secrets)" no/no/no
CPOD=$(kubectl -n $NS get sandbox client-sb -o jsonpath='{.status.podName}')
# (stdout only: kubectl 1.32 may log "Unknown stream id 1, discarding message" against kwok)
check "editor execs into its Sandbox's pod (kubectl exec)" eq "$(ck exec "$CPOD" -- echo hello-from-sandbox 2>"$T/ck-exec.err")" hello-from-sandbox
if [ -x "$BUILD_DIR/bin/yao-sandbox" ]; then
    check "editor execs into its Sandbox (yao-sandbox exec)" \
        eq "$(KUBECONFIG=$CKC "$BUILD_DIR/bin/yao-sandbox" exec client-sb -n $NS -- echo hello-from-cli 2>&1)" hello-from-cli
    check "and the CLI could mark it used (last-used-at)" \
        test -n "$(kubectl -n $NS get sandbox client-sb -o jsonpath='{.metadata.annotations.sandbox\.yaoapps\.com/last-used-at}')"
else
    echo "skip yao-sandbox exec: no $BUILD_DIR/bin/yao-sandbox (the CLI is not built)"
fi
check "viewer lists Sandboxes" contains "$(vk get sandboxes -o name 2>&1)" "sandbox.sandbox.yaoapps.com/client-sb"
check "viewer can get sandboxes/status" eq "$(vk auth can-i get sandboxes.sandbox.yaoapps.com --subresource=status)" yes
check "viewer: auth can-i create sandboxes -> no" eq "$(vk auth can-i create sandboxes.sandbox.yaoapps.com)" no
check "viewer: creating a Sandbox is Forbidden" contains "$(sandbox viewer-sb eve c1 | vk create -f - 2>&1)" "Forbidden"
check "viewer cannot exec" eq "$(vk auth can-i create pods/exec)" no
# Aggregation into the built-in roles (the kube-controller-manager fills them in).
for r in edit admin view; do kubectl -n $NS create rolebinding agg-$r --clusterrole=$r --serviceaccount=$NS:agg-$r >/dev/null; done
as() { kubectl -n $NS auth can-i "$2" sandboxes.sandbox.yaoapps.com --as=system:serviceaccount:$NS:$1 2>/dev/null; }
is_yes() { [ "$(as "$1" "$2")" = yes ]; }
check "built-in edit role grants creating Sandboxes (aggregated)" eventually 20 is_yes agg-edit create
check "built-in admin role grants deleting Sandboxes (aggregated)" eventually 20 is_yes agg-admin delete
check "built-in view role grants listing Sandboxes (aggregated)" eventually 20 is_yes agg-view list
check "built-in view role does not grant creating Sandboxes" eq "$(as agg-view create)" no

# --- upgrade: a changed value reaches the Deployment ---------------------------------------------
check "helm upgrade (logLevel=debug, replicas=2)" helm upgrade $REL "$CHART" --namespace $RNS --reuse-values --set logLevel=debug --set replicas=2
check "release is at revision 2" eq "$(helm status $REL -n $RNS -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["info"]["status"], d["version"])')" "deployed 2"
check "Deployment now runs --log-level=debug with 2 replicas" \
    eq "$(kubectl -n $RNS get deployment $C -o jsonpath='{.spec.replicas} {.spec.template.spec.containers[0].args}')" '2 ["--log-level=debug","--metrics-addr=:8080","--leader-elect","--lease-name=yao-sandbox-helm-controller"]'
# kwok's pods do not stay Ready on this plane (its nodes flap NotReady), so a rolling update
# may not finish: assert that the rollout started, not that it completed.
debug_pod() { [ "$(kubectl -n $RNS get pods -l app.kubernetes.io/instance=$REL -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.spec.containers[0].args[0]}{"\n"}{end}' | grep -c -- --log-level=debug)" -ge 1 ]; }
check "a controller pod with the new template is Running (kwok)" eventually 60 debug_pod
new_rs() { kubectl -n $RNS get rs -l app.kubernetes.io/instance=$REL -o jsonpath='{range .items[*]}{.spec.template.spec.containers[0].args[0]} {.spec.replicas}{"\n"}{end}' | grep -q -- '--log-level=debug [12]$'; }
check "the Deployment rolls out a new ReplicaSet for it" eventually 30 new_rs
check "replicas=2 added a PodDisruptionBudget (minAvailable 1)" \
    eq "$(kubectl -n $RNS get pdb $C -o jsonpath='{.spec.minAvailable}')" 1

# --- upgrade to namespaced mode: the Role alone is enough -----------------------------------------
kill_controller TERM
check "cluster-wide controller's log stayed clean to its end (client Sandboxes too)" no_denials "$LOG1"
check "helm upgrade to namespaced mode (watchNamespaces={$NS})" helm upgrade $REL "$CHART" --namespace $RNS --reuse-values --set "watchNamespaces={$NS}"
gone() { ! kubectl get "$@" >/dev/null 2>&1; }
check "ClusterRole $C is gone" gone clusterrole/$C
check "ClusterRoleBinding $C is gone" gone clusterrolebinding/$C
check "Role and RoleBinding $C in $NS" exists -n $NS role/$C rolebinding/$C
check "Deployment now runs with --namespace=$NS" contains "$(kubectl -n $RNS get deployment $C -o jsonpath='{.spec.template.spec.containers[0].args}')" "\"--namespace=$NS\""
ns_only() { [ "$(can list sandboxes.sandbox.yaoapps.com -n $NS)/$(can list sandboxes.sandbox.yaoapps.com --all-namespaces)/$(can list sandboxes.sandbox.yaoapps.com -n default)" = yes/no/no ]; }
check "SA may now list Sandboxes in $NS only" eventually 10 ns_only
LOG2=$T/controller-namespaced.log
# ...as on OpenShift: the platform picks the sandbox pods' uid; and pull secrets.
run_controller "$LOG2" --sandbox-run-as-user auto --sandbox-image-pull-secret regcred --sandbox-image-pull-secret mirror
sandbox helm-second carol c1 | kubectl -n $NS apply -f - >/dev/null
check "Sandbox becomes Running under the namespaced Role" eventually 30 phase_is $NS helm-second Running
P2=$(kubectl -n $NS get sandbox helm-second -o jsonpath='{.status.podName}')
uid2=$(kubectl -n $NS get pod "$P2" -o jsonpath='{.metadata.uid}')
kubectl -n $NS delete pod "$P2" --wait=false >/dev/null
recreated() { local u; u=$(kubectl -n $NS get pod "$P2" -o jsonpath='{.metadata.uid}') && [ -n "$u" ] && [ "$u" != "$uid2" ]; }
check "a deleted sandbox pod is recreated under the namespaced Role" eventually 30 recreated
podsec() { kubectl -n $NS get pod "$P2" -o jsonpath='{.spec.securityContext.runAsNonRoot}/{.spec.securityContext.runAsUser}/{.spec.securityContext.fsGroup}/{.spec.imagePullSecrets[*].name}'; }
check "--sandbox-run-as-user auto: the API server admitted a pod with no uid or fsGroup (runAsNonRoot kept); pull secrets set" \
    eq "$(podsec)" "true///regcred mirror"
check "controller log has no Forbidden / reconcile failed / could not (namespaced)" no_denials "$LOG2"
cat "$LOG1" "$LOG2" >> "$LOG"

# --- uninstall -----------------------------------------------------------------------------------
check "helm uninstall" helm uninstall $REL --namespace $RNS --wait
check "Deployment is gone" gone -n $RNS deployment/$C
check "client ClusterRoles are gone" gone clusterrole/$REL-editor
check "viewer ClusterRole is gone" gone clusterrole/$REL-viewer
check "Role in $NS is gone" gone -n $NS role/$C
check "the CRD stays (helm never deletes crds/)" exists crd/sandboxes.sandbox.yaoapps.com
check "and so do the Sandboxes" exists -n $NS sandbox/helm-second
check "no cluster-scoped object of the release is left" eq "$(kubectl get clusterrole,clusterrolebinding -l app.kubernetes.io/instance=$REL -o name)" ""

# --- a sharded release: one Deployment per shard, a controller and a Lease each -----------------
# Release yao-sandbox-shards (in its own namespace) with shards=2, replicas=2, watching SNS
# only. kwok runs each Deployment's pods with nothing in them; the suite runs what they would:
# one controller per Deployment on this host, with that Deployment's own args and variables
# and the release's ServiceAccount token.
SREL=yao-sandbox-shards
SNS=yao-it-shards
SC=$SREL-controller
helm uninstall $SREL -n $SREL --wait >/dev/null 2>&1
kubectl delete clusterrole,clusterrolebinding -l app.kubernetes.io/instance=$SREL --ignore-not-found >/dev/null
fresh_namespace $SREL
fresh_namespace $SNS
on_exit "'$HELM' uninstall $SREL -n $SREL --wait"
check "helm install with shards=2, replicas=2 (watchNamespaces={$SNS})" \
    helm install $SREL "$CHART" --namespace $SREL --set shards=2 --set replicas=2 --set "watchNamespaces={$SNS}"
names_of() { kubectl -n $SREL get "$1" -o name | sort | tr '\n' ' '; }
check "two Deployments, $SC-shard-0 and $SC-shard-1, no unsharded one" \
    eq "$(names_of deployments)" "deployment.apps/$SC-shard-0 deployment.apps/$SC-shard-1 "
check "a PodDisruptionBudget per shard" \
    eq "$(names_of pdb)" "poddisruptionbudget.policy/$SC-shard-0 poddisruptionbudget.policy/$SC-shard-1 "
# selector_of KIND NAME [FIELD] — its matchLabels (or FIELD) as a label selector
selector_of() { kubectl -n $SREL get "$1" "$2" -o go-template="{{range \$k, \$v := ${3:-.spec.selector.matchLabels}}}{{\$k}}={{\$v}},{{end}}" | sed 's/,$//'; }
# the shard labels of the pods a selector picks, counted: "2x0 " = two pods of shard 0
picked() { kubectl -n $SREL get pods -l "$1" -o jsonpath='{range .items[*]}{.metadata.labels.sandbox\.yaoapps\.com/shard}{"\n"}{end}' | sort | uniq -c | awk '{printf "%sx%s ", $1, $2}'; }
check "$SC-shard-0 selects its two pods and none of shard 1's" eventually 60 eval '[ "$(picked "$(selector_of deployment $SC-shard-0)")" = "2x0 " ]'
check "$SC-shard-1 selects its two pods and none of shard 0's" eventually 60 eval '[ "$(picked "$(selector_of deployment $SC-shard-1)")" = "2x1 " ]'
check "each shard's budget selects its own shard's pods only" \
    eq "$(picked "$(selector_of pdb $SC-shard-0)")|$(picked "$(selector_of pdb $SC-shard-1)")" "2x0 |2x1 "
check "the metrics Service selects the pods of both shards" eq "$(picked "$(selector_of service $SC-metrics .spec.selector)")" "2x0 2x1 "
running_in() { kubectl -n $SREL get pods -l "$(selector_of service $SC-metrics .spec.selector)" -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' | wc -l; }
check "kwok runs the four controller pods" eventually 60 eval '[ "$(running_in)" = 4 ]'

SSAKC=$T/shards-controller.kubeconfig
sa_kubeconfig "$SSAKC" $SC $SREL
# run_shard I LOG — the controller as Deployment $SC-shard-I runs it: its args and its
# variables (the Lease namespace, from the downward API there, is the release namespace);
# the probes and metrics on a free local port instead of :8080.
run_shard() {
    local args env
    mapfile -t args < <(kubectl -n $SREL get deployment $SC-shard-$1 -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}')
    mapfile -t env < <(kubectl -n $SREL get deployment $SC-shard-$1 -o json | python3 -c 'import json, sys
for e in json.load(sys.stdin)["spec"]["template"]["spec"]["containers"][0]["env"]:
    if "value" in e: print(e["name"] + "=" + e["value"])')
    env "${env[@]}" YAO_SANDBOX_LEASE_NAMESPACE=$SREL "$BIN" --kubeconfig "$SSAKC" "${args[@]}" --metrics-addr=127.0.0.1:0 >> "$2" 2>&1 &
    CONTROLLER_PIDS+=($!)
    on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
}
SLOG0=$T/controller-shard-0.log; SLOG1=$T/controller-shard-1.log
run_shard 0 "$SLOG0"; SPID0=${CONTROLLER_PIDS[-1]}
run_shard 1 "$SLOG1"; SPID1=${CONTROLLER_PIDS[-1]}
check "shard 0's controller started with --shards=2 --shard=0" contains "$(tr '\0' ' ' < /proc/$SPID0/cmdline)" "--shards=2 --shard=0"
check "shard 1's controller started with --shards=2 --shard=1" contains "$(tr '\0' ' ' < /proc/$SPID1/cmdline)" "--shards=2 --shard=1"
holder() { kubectl -n $SREL get lease "$1" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
check "kubectl get lease: $SC-shard-0 and $SC-shard-1 are both held" eventually 30 eval '[ -n "$(holder $SC-shard-0)" ] && [ -n "$(holder $SC-shard-1)" ]'
check "...and they are the only Leases of the release (no unsharded $SC)" \
    eq "$(names_of leases)" "lease.coordination.k8s.io/$SC-shard-0 lease.coordination.k8s.io/$SC-shard-1 "
# the identity a controller logged when it took a Lease
took() { sed -n "s/.*msg=\"became leader\" lease=$SREL\/$2 identity=\([^ ]*\).*/\1/p" "$1" | tail -n 1; }
check "each controller holds its own shard's Lease" \
    eval '[ -n "$(took "$SLOG0" $SC-shard-0)" ] && [ -n "$(took "$SLOG1" $SC-shard-1)" ] &&
          [ "$(holder $SC-shard-0)" = "$(took "$SLOG0" $SC-shard-0)" ] && [ "$(holder $SC-shard-1)" = "$(took "$SLOG1" $SC-shard-1)" ] &&
          [ "$(holder $SC-shard-0)" != "$(holder $SC-shard-1)" ]'

# shard_of USER S — the user's shard in the release's namespace (lib.sh's shard_hash)
shard_of() { shard_hash "$SNS" "$1" "$2"; }
SUSERS=(ann ben cat hal lea fay)   # over both shards of 2 and all three of 3
# expected S — how many of the Sandboxes fall in each shard of S: "n0 n1 ..."
expected() {
    local u counts=()
    for ((i = 0; i < $1; i++)); do counts[i]=0; done
    for u in $(kubectl -n $SNS get sandboxes -o jsonpath='{range .items[*]}{.spec.userID}{"\n"}{end}'); do
        i=$(shard_of "$u" "$1"); counts[i]=$((counts[i] + 1))
    done
    echo "${counts[*]}"
}
for i in 1 2 3 4 5 6 7 8; do
    sandbox "sharded-$i" "${SUSERS[$(( (i - 1) % 6 ))]}" "c$i" | kubectl -n $SNS apply -f - >/dev/null
done
E2=$(expected 2)
echo "    Sandboxes per shard of 2: $E2"
check "the 6 users fall in both shards" eval '[[ "$E2" != 0\ * && "$E2" != *\ 0 ]]'
running_sbx() { kubectl -n $SNS get sandboxes -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$'; }
check "8 Sandboxes of 6 users all reach Running" eventually 120 eval '[ "$(running_sbx)" = 8 ]'
# pods_by_shard S N — N sandbox pods, each labelled shard = hash(namespace/user) mod S, shards = S
pods_by_shard() {
    local bad=0 n=0 name user shard of want
    while read -r name user shard of; do
        [ -z "$name" ] && continue
        n=$((n + 1)); want=$(shard_of "$user" "$1")
        [ "$shard/$of" = "$want/$1" ] || { echo "    pod $name of $user: shard/shards [$shard/$of], want $want/$1" >&2; bad=1; }
    done < <(kubectl -n $SNS get pods -l sandbox.yaoapps.com/name -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.annotations.sandbox\.yaoapps\.com/user-id} {.metadata.labels.sandbox\.yaoapps\.com/shard} {.metadata.labels.sandbox\.yaoapps\.com/shards}{"\n"}{end}')
    [ "$n" = "$2" ] || { echo "    $n sandbox pods, want $2" >&2; bad=1; }
    return $bad
}
check "8 sandbox pods, each made by its user's shard (labels shard = hash mod 2, shards = 2)" pods_by_shard 2 8
sport() { sed -n 's/.*msg="serving probes and metrics".* port=\([0-9]*\).*/\1/p' "$1" | tail -n 1; }
sbx_metric() { curl -s "http://127.0.0.1:$(sport "$1")/metrics" | awk '$1 ~ /^yao_sandbox_sandboxes\{/ { n += $2 } END { print n + 0 }'; }
check "each controller serves only its shard's Sandboxes (/metrics: $E2)" eq "$(sbx_metric "$SLOG0") $(sbx_metric "$SLOG1")" "$E2"
cat "$SLOG0" "$SLOG1" > "$T/controller-shards.log"
check "neither controller's log has a Forbidden / reconcile failed / could not (the chart's RBAC)" no_denials "$T/controller-shards.log"

# 2 -> 3 shards, as the chart README says: helm upgrade --set shards=3 alone. (The two
# controllers on this host stand in for the Deployments' pods, which kwok does not run: they
# are stopped as the rolling update would stop them; test_shard.sh shows the new count
# waiting while the old one still runs.)
PODS2=$(kubectl -n $SNS get pods -l sandbox.yaoapps.com/name -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid}{"\n"}{end}' | sort)
DUIDS=$(kubectl -n $SREL get deployment $SC-shard-0 $SC-shard-1 -o jsonpath='{.items[*].metadata.uid}')
for p in $SPID0 $SPID1; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
RESHARD=$(sed -n '/^### Sharding/,/^## /p' "$CHART/README.md" | sed -n '/^Changing `shards`/,$p' | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')
check "the chart README has the commands to change shards" contains "$RESHARD" "--set shards=3"
RESHARD=$(sed "s/instance=yao-sandbox,/instance=$SREL,/g; s/yao-sandbox-system/$SREL/g; s/helm upgrade yao-sandbox /helm upgrade $SREL /" <<<"$RESHARD")
reshard() { (cd "$SRC_DIR" && eval "$RESHARD") >/dev/null; }
check "the README's command upgrades to shards=3" reshard
check "three Deployments now, shard 0 and 1 kept (same uids), each back at 2 replicas with --shards=3 --shard=I" \
    eq "$(names_of deployments)|$(kubectl -n $SREL get deployment $SC-shard-0 $SC-shard-1 -o jsonpath='{.items[*].metadata.uid}')|$(kubectl -n $SREL get deployments -o jsonpath='{range .items[*]}{.spec.replicas} {.spec.template.spec.containers[0].args}{"\n"}{end}' | sed 's/^\([0-9]*\) .*\(--shards=[0-9]*\).*\(--shard=[0-9]*\).*/\1 \2 \3/' | tr '\n' ' ')" \
    "deployment.apps/$SC-shard-0 deployment.apps/$SC-shard-1 deployment.apps/$SC-shard-2 |$DUIDS|2 --shards=3 --shard=0 2 --shards=3 --shard=1 2 --shards=3 --shard=2 "
check "kwok runs the six controller pods" eventually 60 eval '[ "$(running_in)" = 6 ]'
SLOG2=$T/controller-shard-2.log
run_shard 0 "$SLOG0"; SPID0=${CONTROLLER_PIDS[-1]}
run_shard 1 "$SLOG1"; SPID1=${CONTROLLER_PIDS[-1]}
run_shard 2 "$SLOG2"; SPID2=${CONTROLLER_PIDS[-1]}
check "each of the three controllers takes its shard's Lease ($SC-shard-0, -1, -2)" \
    eventually 30 eval '[ "$(holder $SC-shard-0)" = "$(took "$SLOG0" $SC-shard-0)" ] && [ "$(holder $SC-shard-1)" = "$(took "$SLOG1" $SC-shard-1)" ] &&
                        [ "$(holder $SC-shard-2)" = "$(took "$SLOG2" $SC-shard-2)" ] && [ -n "$(holder $SC-shard-2)" ] &&
                        [ "$(grep -c "became leader" "$SLOG0")" = 2 ] && [ "$(grep -c "became leader" "$SLOG1")" = 2 ]'
check "every sandbox pod relabelled to hash mod 3 (shards = 3)" eventually 60 pods_by_shard 3 8
check "...in place: the same 8 pods (names and uids)" eq "$(kubectl -n $SNS get pods -l sandbox.yaoapps.com/name -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid}{"\n"}{end}' | sort)" "$PODS2"
sandbox sharded-9 ann c9 | kubectl -n $SNS apply -f - >/dev/null
check "9 Sandboxes Running after the change (a new one of ann too)" eventually 60 eval '[ "$(running_sbx)" = 9 ]'
E3=$(expected 3)
echo "    Sandboxes per shard of 3: $E3"
check "the users fall in all three shards" eval '[[ " $E3 " != *" 0 "* ]]'
sbx3() { [ "$(sbx_metric "$SLOG0") $(sbx_metric "$SLOG1") $(sbx_metric "$SLOG2")" = "$E3" ]; }
check "each of the three serves only its shard's Sandboxes (/metrics: $E3)" eventually 10 sbx3
cat "$SLOG0" "$SLOG1" "$SLOG2" > "$T/controller-shards.log"
check "no Forbidden / reconcile failed / could not after the change" no_denials "$T/controller-shards.log"
for p in $SPID0 $SPID1 $SPID2; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
cat "$SLOG0" "$SLOG1" "$SLOG2" >> "$LOG"
check "helm uninstall of the sharded release" helm uninstall $SREL --namespace $SREL --wait
check "its Deployments and budgets are gone" eq "$(names_of deployments)$(names_of pdb)" ""

# --- adopting a kubectl install (release yao-sandbox, in yao-sandbox-system) ----------------------
# The plain manifests, Deployment included; then the chart README's own commands mark them
# as the release's and install it: Helm takes the objects over, the Deployment is the same
# one (its selector, immutable, already is the chart's). Afterwards the objects other suites
# expect are put back (install_manifests). The uninstall deletes the ServiceAccount
# yao-sandbox-controller, and install_manifests makes a new one: the token cached for it in
# the plane (start_controller's controller-sa.kubeconfig) is then invalid, so it goes too
# and the next suite mints a fresh one.
restore_manifests() { install_manifests && rm -f "$YAO_PLANE_DIR/controller-sa.kubeconfig"; }
on_exit "'$HELM' uninstall yao-sandbox -n yao-sandbox-system --wait >/dev/null 2>&1; restore_manifests"
kubectl -n yao-sandbox-system delete deployment yao-sandbox-controller --ignore-not-found --wait >/dev/null
kubectl apply -f "$SRC_DIR/crd/" -f "$SRC_DIR/manifests/" >/dev/null
DUID=$(kubectl -n yao-sandbox-system get deployment yao-sandbox-controller -o jsonpath='{.metadata.uid}')
ADOPT=$(sed -n '/^### Adopting a kubectl install/,/^```$/p' "$CHART/README.md" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')
check "the chart README has the adoption commands" contains "$ADOPT" "helm install yao-sandbox charts/yao-sandbox"
adopt() { (cd "$SRC_DIR" && eval "$ADOPT") >/dev/null; }
check "helm install adopts the kubectl install (README commands)" adopt
check "release yao-sandbox is deployed" eq "$(helm status yao-sandbox -n yao-sandbox-system -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["info"]["status"])')" deployed
check "the Deployment was taken over, not recreated" eq "$(kubectl -n yao-sandbox-system get deployment yao-sandbox-controller -o jsonpath='{.metadata.uid}')" "$DUID"
check "...and is now managed by Helm" eq "$(kubectl -n yao-sandbox-system get deployment yao-sandbox-controller -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}')" Helm
check "helm uninstall of the adopted release" helm uninstall yao-sandbox -n yao-sandbox-system --wait
check "the objects other suites use are back" restore_manifests
check "...and a fresh controller token works" eq "$(sa_kubeconfig "$T/after.kubeconfig" && kubectl --kubeconfig "$T/after.kubeconfig" auth can-i list sandboxes.sandbox.yaoapps.com --all-namespaces)" yes
finish

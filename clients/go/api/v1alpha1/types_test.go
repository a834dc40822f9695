package v1alpha1

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// A Sandbox as the API server returns it, with the fields of the SandboxClass round: a
// class, an ephemeral-storage limit, env from a Secret, the network, a workspace clone,
// and the status the controller writes (the lifecycle in force, the place in line).
const sandboxJSON = `{"apiVersion":"sandbox.yaoapps.com/v1alpha1","kind":"Sandbox",
 "metadata":{"name":"yao-sb-alice-c1","namespace":"ns"},
 "spec":{"userID":"alice","chatID":"c1","className":"small",
  "resources":{"memory":"1Gi","ephemeralStorage":"4Gi"},
  "env":[{"name":"TOKEN","valueFrom":{"secretKeyRef":{"name":"tok","key":"t","optional":true}}},{"name":"A","value":"b"}],
  "network":{"egressCIDRs":["10.0.0.0/8"]},
  "workspace":{"from":{"sandbox":"yao-sb-alice-c0"}}},
 "status":{"phase":"Pending","lifecycle":"long-running","queuePosition":3,"ignoredLastUsedAt":"soon",
  "idleTimeout":"5s","reclaimAfter":"90s","idleAt":"2026-11-30T10:00:05Z",
  "conditions":[{"type":"Ready","status":"False","reason":"Reclaimed","message":"m","lastTransitionTime":"2026-11-30T10:00:00Z"}]}}`

func TestSandboxFields(t *testing.T) {
	var sb Sandbox
	if err := json.Unmarshal([]byte(sandboxJSON), &sb); err != nil {
		t.Fatal(err)
	}
	s := sb.Spec
	if s.ClassName != "small" || s.Resources.EphemeralStorage.String() != "4Gi" || s.Network.EgressCIDRs[0] != "10.0.0.0/8" ||
		s.Workspace.From.Sandbox != "yao-sb-alice-c0" {
		t.Fatalf("spec: %+v", s)
	}
	ref := s.Env[0].ValueFrom.SecretKeyRef
	if ref.Name != "tok" || ref.Key != "t" || ref.Optional == nil || !*ref.Optional || s.Env[0].Value != "" || s.Env[1].ValueFrom != nil {
		t.Fatalf("env: %+v", s.Env)
	}
	if sb.Status.Lifecycle != LifecycleLongRunning || sb.Status.QueuePosition != 3 || sb.Status.IgnoredLastUsedAt != "soon" {
		t.Fatalf("status: %+v", sb.Status)
	}
	if sb.Status.IdleTimeout != "5s" || sb.Status.ReclaimAfter != "90s" || sb.Status.IdleAt == nil ||
		sb.Status.IdleAt.UTC().Format("15:04:05") != "10:00:05" {
		t.Fatalf("published policy: %+v", sb.Status)
	}
	if sb.EffectiveLifecycle() != LifecycleLongRunning || sb.ReadyCondition().Reason != ReasonReclaimed {
		t.Fatal("effective lifecycle or reason")
	}
	sb.Spec.Lifecycle = LifecyclePersistent
	if sb.EffectiveLifecycle() != LifecyclePersistent {
		t.Fatal("the spec's lifecycle wins")
	}
	// deep copies share nothing
	cp := sb.DeepCopy()
	*cp.Spec.Env[0].ValueFrom.SecretKeyRef.Optional = false
	cp.Spec.Network.EgressCIDRs[0] = "x"
	cp.Status.IdleAt.Time = cp.Status.IdleAt.Add(time.Hour)
	if !*sb.Spec.Env[0].ValueFrom.SecretKeyRef.Optional || sb.Spec.Network.EgressCIDRs[0] != "10.0.0.0/8" ||
		sb.Status.IdleAt.UTC().Format("15:04:05") != "10:00:05" {
		t.Fatal("DeepCopy shares memory")
	}
	// an empty Sandbox encodes none of the new optional fields
	out, _ := json.Marshal(&Sandbox{Spec: SandboxSpec{UserID: "u", ChatID: "c"}})
	var m map[string]interface{}
	_ = json.Unmarshal(out, &m)
	if !reflect.DeepEqual(m["spec"], map[string]interface{}{"userID": "u", "chatID": "c"}) {
		t.Fatalf("empty spec encodes %v", m["spec"])
	}
}

const classJSON = `{"apiVersion":"sandbox.yaoapps.com/v1alpha1","kind":"SandboxClass",
 "metadata":{"name":"small","annotations":{"sandbox.yaoapps.com/is-default-class":"true"}},
 "spec":{"image":{"default":"busybox:1.36","allowedPrefixes":["busybox:"]},
  "resources":{"memory":{"default":"1Gi","max":"2Gi"},"cpu":{"max":2},"ephemeralStorage":{"max":"8Gi"}},
  "workspace":{"storageClassName":"fast","allowedStorageClassNames":["fast"],"defaultSize":"5Gi","maxSize":"20Gi"},
  "runtimeClassName":"gvisor","priorityClassName":"sandboxes","nodeSelector":{"pool":"sb"},
  "tolerations":[{"key":"sandbox","operator":"Exists","effect":"NoSchedule"}],
  "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},
  "lifecycle":"long-running","idleTimeout":"10m","maxRunningPerUser":3,"reclaim":{"idleAfter":"30m"},
  "network":{"mode":"isolated","ingressFrom":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"yao"}}}],
   "egressCIDRs":["0.0.0.0/0"],"allowDNS":true,"allowAPIServer":false}}}`

func TestSandboxClassFields(t *testing.T) {
	var c SandboxClass
	if err := json.Unmarshal([]byte(classJSON), &c); err != nil {
		t.Fatal(err)
	}
	s := c.Spec
	if !c.IsDefault() || s.Image.Default != "busybox:1.36" || s.Resources.Memory.Max.String() != "2Gi" ||
		s.Resources.CPU.Max.IntValue() != 2 || s.Resources.EphemeralStorage.Max.String() != "8Gi" ||
		s.Workspace.MaxSize.String() != "20Gi" || s.RuntimeClassName != "gvisor" || s.NodeSelector["pool"] != "sb" ||
		s.Tolerations[0].Key != "sandbox" || s.Affinity.NodeAffinity == nil || s.Lifecycle != LifecycleLongRunning ||
		s.MaxRunningPerUser != 3 || s.Reclaim.IdleAfter != "30m" || s.Network.Mode != "isolated" ||
		s.Network.IngressFrom[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "yao" ||
		!*s.Network.AllowDNS || *s.Network.AllowAPIServer || s.Network.AllowMetadata != nil {
		t.Fatalf("class: %+v", s)
	}
	cp := c.DeepCopy()
	cp.Spec.NodeSelector["pool"] = "x"
	cp.Spec.Tolerations[0].Key = "x"
	if c.Spec.NodeSelector["pool"] != "sb" || c.Spec.Tolerations[0].Key != "sandbox" {
		t.Fatal("DeepCopy shares memory")
	}
	var l SandboxClassList
	l.Items = []SandboxClass{c}
	if l.DeepCopyObject().(*SandboxClassList).Items[0].Name != "small" {
		t.Fatal("list deep copy")
	}
}

func TestSchemeKnowsTheClass(t *testing.T) {
	sch := runtime.NewScheme()
	if err := AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Sandbox", "SandboxList", "SandboxClass", "SandboxClassList"} {
		if !sch.Recognizes(SchemeGroupVersion.WithKind(kind)) {
			t.Fatalf("scheme does not know %s", kind)
		}
	}
}

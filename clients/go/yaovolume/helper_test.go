package yaovolume

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

func stoppedSandbox() *v1alpha1.Sandbox {
	return &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "yao-sb-u-c", UID: "1234-abcd", Annotations: map[string]string{v1alpha1.AnnotationLastUsedAt: "2026-12-05T10:00:00Z"}},
		Spec:       v1alpha1.SandboxSpec{UserID: "u", ChatID: "c", Paused: true},
		Status:     v1alpha1.SandboxStatus{Phase: v1alpha1.PhaseStopped, WorkspaceClaim: "yao-sb-u-c-workspace", NodeName: "node-1"},
	}
}

func TestStillStopped(t *testing.T) {
	then := stoppedSandbox()
	if !stillStopped(then.DeepCopy(), then) {
		t.Fatal("an unchanged Sandbox")
	}
	now := metav1.Now()
	for name, change := range map[string]func(*v1alpha1.Sandbox){
		"unpaused":        func(s *v1alpha1.Sandbox) { s.Spec.Paused = false },
		"touched":         func(s *v1alpha1.Sandbox) { s.Annotations[v1alpha1.AnnotationLastUsedAt] = "2026-12-05T11:00:00Z" },
		"creating":        func(s *v1alpha1.Sandbox) { s.Status.Phase = v1alpha1.PhaseCreating },
		"pending":         func(s *v1alpha1.Sandbox) { s.Status.Phase = v1alpha1.PhasePending },
		"being deleted":   func(s *v1alpha1.Sandbox) { s.DeletionTimestamp = &now },
		"another Sandbox": func(s *v1alpha1.Sandbox) { s.UID = "other" },
	} {
		s := then.DeepCopy()
		change(s)
		if stillStopped(s, then) {
			t.Errorf("%s: not noticed", name)
		}
	}
}

func TestHelperPodIsRestricted(t *testing.T) {
	c := &Client{opts: Options{RunAsUser: 1000, HelperDeadline: 10 * time.Minute}}
	sb := stoppedSandbox()
	pod := c.helperPod(sb, "registry/sandbox:1")
	s, ctr := pod.Spec, pod.Spec.Containers[0]
	if pod.Name != "yao-vol-1234-abcd" || pod.Labels[LabelHelperFor] != "yao-sb-u-c" || pod.Labels[v1alpha1.LabelManagedBy] != "" ||
		pod.Annotations[AnnotationHelperFor] != "yao-sb-u-c" {
		t.Fatalf("metadata %+v", pod.ObjectMeta)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != sb.UID || pod.OwnerReferences[0].Controller != nil {
		t.Fatalf("owner %+v", pod.OwnerReferences)
	}
	if *s.AutomountServiceAccountToken || *s.ActiveDeadlineSeconds != 600 || s.RestartPolicy != "Never" ||
		!*s.SecurityContext.RunAsNonRoot || *s.SecurityContext.RunAsUser != 1000 || *s.SecurityContext.FSGroup != 1000 ||
		s.SecurityContext.SeccompProfile.Type != "RuntimeDefault" {
		t.Fatalf("pod security %+v", s)
	}
	if !*ctr.SecurityContext.ReadOnlyRootFilesystem || *ctr.SecurityContext.AllowPrivilegeEscalation ||
		*ctr.SecurityContext.Privileged || ctr.SecurityContext.Capabilities.Drop[0] != "ALL" || ctr.Resources.Limits.Memory().IsZero() {
		t.Fatalf("container security %+v", ctr)
	}
	if s.Volumes[0].PersistentVolumeClaim.ClaimName != "yao-sb-u-c-workspace" || ctr.VolumeMounts[0].MountPath != "/workspace" {
		t.Fatalf("volumes %+v %+v", s.Volumes, ctr.VolumeMounts)
	}
	pref := s.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(pref) != 1 || pref[0].Preference.MatchFields[0].Values[0] != "node-1" || s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Fatalf("placement %+v", s.Affinity)
	}
}

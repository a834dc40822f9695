package yaovolume

// The Volume against real containers on the plane's real node
// (tests/integration/test_node_yaovolume.sh sets the YAO_NODE_* variables):
//   - TestVolumeRunningOnTheRealNode: the shared suite on a running Sandbox (200 MB file);
//   - TestVolumeStoppedOnTheRealNode: the suite on a stopped one through the helper pod,
//     which is checked (restricted, labelled, owned, gone after Close), the Sandbox never
//     woken, links planted while it ran still refused, the helper removed when the
//     Sandbox is started under a sync (ErrSandboxStarted), PolicyRefuse, and a client
//     without pods/create getting Forbidden;
//   - TestVolumeBenchOnTheRealNode: SyncPush against kubectl cp, re-push latency,
//     ReadFile against kubectl exec cat, a stopped sandbox's ListDir/ReadFile.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

func nodeClient(t *testing.T, kcVar string, opts Options) *Client {
	t.Helper()
	kc := os.Getenv(kcVar)
	if kc == "" || os.Getenv("YAO_NODE_NAMESPACE") == "" {
		t.Skip("real-node test: tests/integration/test_node_yaovolume.sh sets YAO_NODE_*")
	}
	opts.Namespace = os.Getenv("YAO_NODE_NAMESPACE")
	if opts.HelperImage == "" {
		opts.HelperImage = os.Getenv("YAO_NODE_HELPER_IMAGE")
	}
	c, err := NewFromKubeconfig(kc, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func sandboxShell(c *Client, name, root string) func(t *testing.T, script string) string {
	return func(t *testing.T, script string) string {
		t.Helper()
		var out strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		code, err := c.Sandboxes().Exec(ctx, name, sandbox.ExecOptions{Command: []string{"sh", "-c", script}, WorkDir: root,
			Stdout: &out, Stderr: &out, NoStart: true})
		if err != nil || code != 0 {
			t.Fatalf("%s: exit %d, %v: %s", script, code, err, out.String())
		}
		return out.String()
	}
}

func TestVolumeRunningOnTheRealNode(t *testing.T) {
	c := nodeClient(t, "YAO_NODE_KUBECONFIG", Options{})
	sid := os.Getenv("YAO_NODE_RUNNING_SESSION")
	ctx := context.Background()
	sb, err := c.Sandbox(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if !sb.IsRunning() {
		t.Fatalf("sandbox %s is not running", sb.Name)
	}
	runSuite(t, suiteEnv{V: c, Session: sid, Shell: sandboxShell(c, sb.Name, sb.MountPath()), BigFile: 200 << 20})
}

func TestVolumeStoppedOnTheRealNode(t *testing.T) {
	c := nodeClient(t, "YAO_NODE_KUBECONFIG", Options{HelperIdle: 5 * time.Second})
	sid := os.Getenv("YAO_NODE_STOPPED_SESSION")
	ctx := context.Background()
	sc := c.Sandboxes()
	sb, err := c.Sandbox(ctx, sid) // a hand-named Sandbox: found by the selectable fields
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := sandbox.PodName(sb.Spec.UserID, sb.Spec.ChatID); sb.Name == want {
		t.Fatalf("the stopped case wants a Sandbox that is not canonically named, got %s", sb.Name)
	}
	// While it runs: a file and links out, made by the sandbox itself.
	if _, err := sc.WaitReady(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	sandboxShell(c, sb.Name, sb.MountPath())(t, `echo written-while-running > before.txt && ln -sfn /etc esc && ln -sfn /etc/hostname hostname-link`)
	if _, err := sc.Stop(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	sb, err = sc.WaitStopped(wctx, sb.Name)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	before := sb.DeepCopy()

	refuse := nodeClient(t, "YAO_NODE_KUBECONFIG", Options{Stopped: PolicyRefuse})
	_, _, err = refuse.ReadFile(ctx, sid, "before.txt")
	wantIs(t, err, ErrSandboxStopped)

	start := time.Now()
	data, _, err := c.ReadFile(ctx, sid, "before.txt")
	must(t, err)
	if string(data) != "written-while-running\n" {
		t.Fatalf("read %q", data)
	}
	t.Logf("first ReadFile of a stopped sandbox (helper start): %v", time.Since(start))
	for _, p := range []string{"esc/hostname", "hostname-link"} {
		_, _, err := c.ReadFile(ctx, sid, p)
		wantIs(t, err, ErrOutsideWorkspace)
	}
	_, err = c.ListDir(ctx, sid, "esc")
	wantIs(t, err, ErrOutsideWorkspace)

	// The helper: restricted, owned by the Sandbox, labelled.
	pod, err := c.getPod(ctx, HelperPodName(string(sb.UID)))
	must(t, err)
	checkHelperPod(t, pod, sb)

	runSuite(t, suiteEnv{V: c, Session: sid, BigFile: 64 << 20})

	// Never woken.
	now, err := sc.Get(ctx, sb.Name)
	must(t, err)
	if !stillStopped(now, before) {
		t.Fatalf("the sandbox was woken: phase %s paused %v last-used-at %q -> %q", now.Status.Phase, now.Spec.Paused,
			before.Annotations[v1alpha1.AnnotationLastUsedAt], now.Annotations[v1alpha1.AnnotationLastUsedAt])
	}

	// A client without pods/create: a clear Forbidden.
	if os.Getenv("YAO_NODE_EDITOR_KUBECONFIG") != "" {
		ed := nodeClient(t, "YAO_NODE_EDITOR_KUBECONFIG", Options{})
		_, err := ed.ListDir(ctx, sid, ".")
		if !apierrors.IsForbidden(err) {
			t.Fatalf("editor-only client: %v, want Forbidden", err)
		}
	}

	// Idle: the helper goes by itself.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.getPod(ctx, HelperPodName(string(sb.UID)))
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle helper is still there: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// Started under a sync: the helper is removed at once, the sync fails, no two writers.
	local := t.TempDir()
	f, err := os.Create(filepath.Join(local, "big.bin"))
	must(t, err)
	_, err = io.Copy(f, io.LimitReader(rand.New(rand.NewSource(3)), 512<<20))
	must(t, err)
	f.Close()
	must(t, c.MkdirAll(ctx, sid, "race")) // the helper runs again
	errc := make(chan error, 1)
	go func() {
		_, err := c.SyncPush(ctx, sid, local, WithRemotePath("race"))
		errc <- err
	}()
	time.Sleep(1500 * time.Millisecond)
	startAt := time.Now()
	if _, err := sc.Start(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	var gone time.Time
	for time.Since(startAt) < 30*time.Second {
		p, err := c.getPod(ctx, HelperPodName(string(sb.UID)))
		if apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil) {
			gone = time.Now()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if gone.IsZero() {
		t.Fatal("the helper outlived the start of its sandbox by 30 s")
	}
	err = <-errc
	if err == nil {
		t.Skip("the push finished before the start")
	}
	wantIs(t, err, ErrSandboxStarted)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	running, err := sc.WaitReady(rctx, sb.Name)
	cancel()
	must(t, err)
	t.Logf("helper gone %v after the start; sandbox running %v after it", gone.Sub(startAt), running.Status.StartedAt.Sub(startAt))
	if running.Status.StartedAt != nil && running.Status.StartedAt.Time.Before(gone.Truncate(time.Second)) {
		t.Logf("note: the sandbox's start time %v precedes the helper's removal %v", running.Status.StartedAt.Time, gone)
	}
	// The files written through the helper are the sandbox's.
	data, _, err = c.ReadFile(ctx, sid, "before.txt")
	must(t, err)
	if string(data) != "written-while-running\n" {
		t.Fatalf("read %q", data)
	}
}

func checkHelperPod(t *testing.T, pod *corev1.Pod, sb *v1alpha1.Sandbox) {
	t.Helper()
	s := pod.Spec
	ctr := s.Containers[0]
	switch {
	case s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken:
		t.Fatal("the helper mounts a token")
	case s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds > 3600:
		t.Fatal("the helper is not bounded in time")
	case s.SecurityContext == nil || s.SecurityContext.RunAsUser == nil || *s.SecurityContext.RunAsUser != 1000 ||
		s.SecurityContext.RunAsNonRoot == nil || !*s.SecurityContext.RunAsNonRoot:
		t.Fatal("the helper may run as root")
	case ctr.SecurityContext == nil || ctr.SecurityContext.ReadOnlyRootFilesystem == nil || !*ctr.SecurityContext.ReadOnlyRootFilesystem ||
		ctr.SecurityContext.AllowPrivilegeEscalation == nil || *ctr.SecurityContext.AllowPrivilegeEscalation ||
		ctr.SecurityContext.Capabilities == nil || len(ctr.SecurityContext.Capabilities.Drop) != 1 || ctr.SecurityContext.Capabilities.Drop[0] != "ALL":
		t.Fatal("the helper's container is not restricted")
	case len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != sb.UID:
		t.Fatal("the helper is not owned by its Sandbox")
	case pod.Labels[LabelHelperFor] != sandbox.LabelValue(sb.Name) || pod.Labels[v1alpha1.LabelManagedBy] != "":
		t.Fatalf("helper labels %v", pod.Labels)
	case s.Volumes[0].PersistentVolumeClaim == nil || s.Volumes[0].PersistentVolumeClaim.ClaimName != sb.Status.WorkspaceClaim:
		t.Fatal("the helper does not mount the sandbox's claim")
	}
}

// --- benchmarks ---------------------------------------------------------------------

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func TestVolumeBenchOnTheRealNode(t *testing.T) {
	if os.Getenv("YAO_NODE_BENCH") == "" {
		t.Skip("YAO_NODE_BENCH not set")
	}
	c := nodeClient(t, "YAO_NODE_KUBECONFIG", Options{})
	ctx := context.Background()
	sid := os.Getenv("YAO_NODE_RUNNING_SESSION")
	sb, err := c.Sandbox(ctx, sid)
	must(t, err)
	kc, ns, pod := os.Getenv("YAO_NODE_KUBECONFIG"), os.Getenv("YAO_NODE_NAMESPACE"), sb.Status.PodName
	kubectl := func(args ...string) time.Duration {
		t.Helper()
		start := time.Now()
		out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kc, "-n", ns}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v: %s", args, err, out)
		}
		return time.Since(start)
	}
	report := map[string]string{}
	note := func(k, format string, a ...any) {
		report[k] = fmt.Sprintf(format, a...)
		t.Logf("BENCH %s %s", k, report[k])
	}

	// A 2,000-file, 50 MB tree: sizes from 1 KiB to ~50 KiB in 40 directories.
	tree := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	var total int64
	for i := 0; i < 2000; i++ {
		size := 1024 + rng.Intn(47*1024)
		if i == 1999 {
			size = max(int(50<<20-total), 1024)
		}
		p := filepath.Join(tree, fmt.Sprintf("d%02d", i%40), fmt.Sprintf("f%04d.bin", i))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		buf := make([]byte, size)
		rng.Read(buf)
		must(t, os.WriteFile(p, buf, 0o644))
		total += int64(size)
	}
	mb := float64(total) / (1 << 20)
	var kcp, push []time.Duration
	for i := 0; i < 3; i++ {
		kcp = append(kcp, kubectl("cp", "-c", v1alpha1.ContainerName, tree, fmt.Sprintf("%s:%s/bench-kcp-%d", pod, sb.MountPath(), i)))
		start := time.Now()
		res, err := c.SyncPush(ctx, sid, tree, WithRemotePath(fmt.Sprintf("bench-push-%d", i)))
		push = append(push, time.Since(start))
		must(t, err)
		if res.FilesSynced != 2000 || res.BytesTransferred != total {
			t.Fatalf("push %+v", res)
		}
	}
	mk, mp := median(kcp), median(push)
	ratio := mk.Seconds() / mp.Seconds()
	note("syncpush_full", "2000 files %.1f MB: SyncPush median %v (%.1f MB/s), kubectl cp median %v (%.1f MB/s), throughput ratio %.2f (runs %v / %v)",
		mb, mp.Round(time.Millisecond), mb/mp.Seconds(), mk.Round(time.Millisecond), mb/mk.Seconds(), ratio, push, kcp)
	if ratio < 0.8 {
		t.Errorf("SyncPush throughput %.2f of kubectl cp's, want >= 0.8", ratio)
	}
	// Re-push after one file changed.
	var re []time.Duration
	for i := 0; i < 11; i++ {
		p := filepath.Join(tree, "d07", "f0007.bin")
		must(t, os.WriteFile(p, []byte(fmt.Sprint("changed ", i)), 0o644))
		start := time.Now()
		res, err := c.SyncPush(ctx, sid, tree, WithRemotePath("bench-push-0"))
		re = append(re, time.Since(start))
		must(t, err)
		if res.FilesSynced != 1 {
			t.Fatalf("re-push %+v", res)
		}
	}
	note("syncpush_one_changed", "p50 %v (runs %v)", median(re).Round(time.Millisecond), re)
	if median(re) >= time.Second {
		t.Errorf("re-push p50 %v, want < 1 s", median(re))
	}
	// ReadFile of a small file against kubectl exec cat.
	must(t, c.WriteFile(ctx, sid, "small.txt", []byte("a small file\n"), 0o644))
	var rf, kcat []time.Duration
	for i := 0; i < 15; i++ {
		kcat = append(kcat, kubectl("exec", pod, "-c", v1alpha1.ContainerName, "--", "cat", sb.MountPath()+"/small.txt"))
		start := time.Now()
		_, _, err := c.ReadFile(ctx, sid, "small.txt")
		rf = append(rf, time.Since(start))
		must(t, err)
	}
	r := median(rf).Seconds() / median(kcat).Seconds()
	note("readfile_small", "ReadFile p50 %v, kubectl exec cat p50 %v, ratio %.2f", median(rf).Round(time.Millisecond), median(kcat).Round(time.Millisecond), r)
	if r > 1.1 {
		t.Errorf("ReadFile latency %.2f of kubectl exec cat's, want <= 1.1", r)
	}
	for i := 0; i < 3; i++ {
		must(t, c.Remove(ctx, sid, fmt.Sprintf("bench-push-%d", i), true))
		must(t, c.Remove(ctx, sid, fmt.Sprintf("bench-kcp-%d", i), true))
	}
	if out := os.Getenv("YAO_NODE_BENCH_OUT"); out != "" {
		var b strings.Builder
		keys := make([]string, 0, len(report))
		for k := range report {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s\n", k, report[k])
		}
		must(t, os.WriteFile(out, []byte(b.String()), 0o644))
	}
}

// TestVolumeStoppedBenchOnTheRealNode times a stopped sandbox's ListDir and ReadFile: the
// first (the helper starts) and warm ones.
func TestVolumeStoppedBenchOnTheRealNode(t *testing.T) {
	if os.Getenv("YAO_NODE_BENCH") == "" {
		t.Skip("YAO_NODE_BENCH not set")
	}
	c := nodeClient(t, "YAO_NODE_KUBECONFIG", Options{})
	ctx := context.Background()
	sid := os.Getenv("YAO_NODE_STOPPED_SESSION")
	sb, err := c.Sandbox(ctx, sid)
	must(t, err)
	sc := c.Sandboxes()
	if sb.IsRunning() {
		must(t, c.WriteFile(ctx, sid, "bench-small.txt", []byte("small\n"), 0o644))
		if _, err := sc.Stop(ctx, sb.Name); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	_, err = sc.WaitStopped(wctx, sb.Name)
	cancel()
	must(t, err)
	start := time.Now()
	_, err = c.ListDir(ctx, sid, ".")
	must(t, err)
	cold := time.Since(start)
	var ls, rf []time.Duration
	for i := 0; i < 10; i++ {
		start = time.Now()
		_, err = c.ListDir(ctx, sid, ".")
		must(t, err)
		ls = append(ls, time.Since(start))
		start = time.Now()
		_, _, err = c.ReadFile(ctx, sid, "bench-small.txt")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		rf = append(rf, time.Since(start))
	}
	line := fmt.Sprintf("first ListDir (helper pod start) %v; then ListDir p50 %v, ReadFile p50 %v",
		cold.Round(time.Millisecond), median(ls).Round(time.Millisecond), median(rf).Round(time.Millisecond))
	t.Logf("BENCH stopped %s", line)
	if out := os.Getenv("YAO_NODE_BENCH_OUT"); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		must(t, err)
		fmt.Fprintf(f, "stopped: %s\n", line)
		f.Close()
	}
}

package sandbox_test

// Integration tests against a live cluster with the controller running: set
// YAO_GO_IT_KUBECONFIG, YAO_GO_IT_NAMESPACE and YAO_GO_IT_ROOT (a directory the exec'd
// commands can write, used as the workspace mountPath), as
// tests/integration/test_goclient.sh does on the local plane, where kwok runs exec'd
// commands as host processes. Without YAO_GO_IT_KUBECONFIG they are skipped.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

// run makes the IDs of this run unique, so reruns never meet an old Sandbox.
var run = fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff)

func itClient(t *testing.T) *sandbox.Client {
	t.Helper()
	kc := os.Getenv("YAO_GO_IT_KUBECONFIG")
	if kc == "" {
		t.Skip("integration test: set YAO_GO_IT_KUBECONFIG (tests/integration/test_goclient.sh does)")
	}
	c, err := sandbox.NewFromKubeconfig(kc, os.Getenv("YAO_GO_IT_NAMESPACE"))
	if err != nil {
		t.Fatal(err)
	}
	c.StartTimeout = 60 * time.Second
	return c
}

// itSpec: a Sandbox whose workspace is a fresh directory below YAO_GO_IT_ROOT.
func itSpec(t *testing.T, lc v1alpha1.Lifecycle) v1alpha1.SandboxSpec {
	t.Helper()
	root := os.Getenv("YAO_GO_IT_ROOT")
	if root == "" {
		t.Fatal("YAO_GO_IT_ROOT is not set")
	}
	return v1alpha1.SandboxSpec{Lifecycle: lc, Workspace: &v1alpha1.WorkspaceSpec{MountPath: root}}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ready gets or creates (user, chat) and waits until it runs; removed at the end.
func ready(t *testing.T, c *sandbox.Client, user, chat string, spec v1alpha1.SandboxSpec) *v1alpha1.Sandbox {
	t.Helper()
	ctx := ctxFor(t, 90*time.Second)
	sb, _, err := c.GetOrCreate(ctx, sandbox.Request{UserID: user, ChatID: chat, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	name := sb.Name
	t.Cleanup(func() { _ = c.Remove(context.Background(), name) })
	sb, err = c.WaitReady(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// TestITGetOrCreate: the canonical name is the pod's (the controller, in C, names the
// pod; the Go client names the Sandbox), eight concurrent calls make one Sandbox, a
// second call finds it.
func TestITGetOrCreate(t *testing.T) {
	c := itClient(t)
	ctx := ctxFor(t, 2*time.Minute)
	for _, pair := range [][2]string{{"alice" + run, "c1"}, {"Alice Smith " + run, "Chat #1 / ünïcode"}} {
		user, chat := pair[0], pair[1]
		want, err := sandbox.PodName(user, chat)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		created, uids := 0, map[string]bool{}
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sb, made, err := c.GetOrCreate(ctx, sandbox.Request{UserID: user, ChatID: chat, Spec: itSpec(t, v1alpha1.LifecycleSession)})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				if made {
					created++
				}
				uids[string(sb.UID)] = true
				if sb.Name != want {
					t.Errorf("name %q, want %q", sb.Name, want)
				}
			}()
		}
		wg.Wait()
		t.Cleanup(func() { _ = c.Remove(context.Background(), want) })
		if created != 1 || len(uids) != 1 {
			t.Fatalf("(%q, %q): %d creations, %d distinct Sandboxes; want 1 and 1", user, chat, created, len(uids))
		}
		sb, err := c.WaitReady(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		if sb.Status.PodName != want {
			t.Errorf("the controller named the pod %q, the Go client the Sandbox %q", sb.Status.PodName, want)
		}
		again, made, err := c.GetOrCreate(ctx, sandbox.Request{UserID: user, ChatID: chat})
		if err != nil || made || again.UID != sb.UID {
			t.Errorf("second GetOrCreate: made %v, uid %s (want %s), %v", made, again.UID, sb.UID, err)
		}
		byPair, err := c.GetFor(ctx, user, chat)
		if err != nil || byPair.UID != sb.UID {
			t.Errorf("GetFor: %v", err)
		}
	}
}

// TestITConflict: the canonical name taken by a Sandbox of another pair is an error.
func TestITConflict(t *testing.T) {
	c := itClient(t)
	ctx := ctxFor(t, 30*time.Second)
	name, _ := sandbox.PodName("bob"+run, "x")
	_, err := c.Create(ctx, &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SandboxSpec{UserID: "eve" + run, ChatID: "x", Paused: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Remove(context.Background(), name) })
	_, _, err = c.GetOrCreate(ctx, sandbox.Request{UserID: "bob" + run, ChatID: "x"})
	var ce *sandbox.ConflictError
	if !errors.As(err, &ce) || ce.OwnerUserID != "eve"+run {
		t.Fatalf("GetOrCreate: %v, want a ConflictError naming eve", err)
	}
	if _, err := c.GetFor(ctx, "bob"+run, "x"); !errors.As(err, &ce) {
		t.Fatalf("GetFor: %v", err)
	}
}

// TestITList: by user and by chat, through the CRD's selectable fields (the API server
// refuses a field selector on a field that is not selectable).
func TestITList(t *testing.T) {
	c := itClient(t)
	ctx := ctxFor(t, 30*time.Second)
	u1, u2 := "lister1"+run, "lister2"+run
	for _, p := range [][2]string{{u1, "a"}, {u1, "b b"}, {u2, "a"}} {
		sb, _, err := c.GetOrCreate(ctx, sandbox.Request{UserID: p[0], ChatID: p[1], Spec: v1alpha1.SandboxSpec{Paused: true}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Remove(context.Background(), sb.Name) })
	}
	names := func(sbs []v1alpha1.Sandbox, err error) string {
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, sb := range sbs {
			if strings.HasSuffix(sb.Spec.UserID, run) && strings.HasPrefix(sb.Spec.UserID, "lister") {
				n = append(n, sb.Spec.UserID+"/"+sb.Spec.ChatID)
			}
		}
		return strings.Join(n, ",")
	}
	if got, want := names(c.ListByUser(ctx, u1)), u1+"/a,"+u1+"/b b"; got != want {
		t.Errorf("ListByUser: %q, want %q", got, want)
	}
	if got, want := names(c.List(ctx, sandbox.ListOptions{UserID: u2, ChatID: "a"})), u2+"/a"; got != want {
		t.Errorf("List(user, chat): %q, want %q", got, want)
	}
	if got := names(c.List(ctx, sandbox.ListOptions{ChatID: "a"})); got != u1+"/a,"+u2+"/a" {
		t.Errorf("List(chat): %q", got)
	}
	if got := names(c.ListByUser(ctx, "nobody"+run)); got != "" {
		t.Errorf("ListByUser(nobody): %q", got)
	}
}

// TestITWaitReadyReason: a spec the controller refuses ends the wait at once with the
// Ready condition's reason and message; a paused one too; a deadline names the state.
func TestITWaitReadyReason(t *testing.T) {
	c := itClient(t)
	ctx := ctxFor(t, 60*time.Second)
	huge := intstr.FromString("2000Ti")
	spec := itSpec(t, v1alpha1.LifecycleSession)
	spec.Resources = &v1alpha1.Resources{Memory: &huge}
	sb, _, err := c.GetOrCreate(ctx, sandbox.Request{UserID: "huge" + run, ChatID: "c", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Remove(context.Background(), sb.Name) })
	start := time.Now()
	_, err = c.WaitReady(ctx, sb.Name)
	var nr *sandbox.NotReadyError
	if !errors.As(err, &nr) || nr.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(nr.Message, "spec.resources.memory") {
		t.Fatalf("WaitReady: %v, want NotReadyError InvalidSpec naming spec.resources.memory", err)
	}
	if nr.Err != nil || time.Since(start) > 30*time.Second {
		t.Errorf("a final state should end the wait at once (took %v, cause %v)", time.Since(start), nr.Err)
	}
	// Exec on it fails the same way, without running anything.
	if code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"true"}}); !errors.As(err, &nr) || code != -1 {
		t.Errorf("Exec on an InvalidSpec sandbox: %d, %v", code, err)
	}

	paused, _, err := c.GetOrCreate(ctx, sandbox.Request{UserID: "paused" + run, ChatID: "c", Spec: v1alpha1.SandboxSpec{Paused: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Remove(context.Background(), paused.Name) })
	if _, err := c.WaitReady(ctx, paused.Name); !errors.As(err, &nr) || !strings.Contains(err.Error(), "paused") {
		t.Errorf("WaitReady(paused): %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	<-short.Done()
	if _, err := c.WaitReady(short, sb.Name); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitReady with an expired context: %v", err)
	}
}

// TestITExec: streams, exit codes, stdin, env, workdir, tty, timeout.
func TestITExec(t *testing.T) {
	c := itClient(t)
	sb := ready(t, c, "exec"+run, "c", itSpec(t, v1alpha1.LifecyclePersistent))
	ctx := ctxFor(t, 2*time.Minute)

	var out, errb bytes.Buffer
	code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{
		Command: []string{"sh", "-c", `printf 'out %s|' "$@"; printf err >&2; exit 3`, "sh", "a b", "it's", "*", ""},
		Stdout:  &out, Stderr: &errb,
	})
	if err != nil || code != 3 || out.String() != "out a b|out it's|out *|out |" || errb.String() != "err" {
		t.Errorf("exec: code %d, err %v, stdout %q, stderr %q", code, err, out.String(), errb.String())
	}

	// 3 MiB of every byte value through stdin and back.
	in := make([]byte, 3<<20)
	if _, err := rand.Read(in); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	code, err = c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"cat"}, Stdin: bytes.NewReader(in), Stdout: &out})
	if err != nil || code != 0 || !bytes.Equal(out.Bytes(), in) {
		t.Errorf("stdin round trip: code %d, err %v, %d bytes back of %d", code, err, out.Len(), len(in))
	}

	out.Reset()
	code, err = c.Exec(ctx, sb.Name, sandbox.ExecOptions{
		Command: []string{"sh", "-c", `printf '%s|%s|%s' "$PWD" "$A" "$B"`},
		Env:     map[string]string{"A": "x y", "B": "=q"}, WorkDir: "/tmp", Stdout: &out,
	})
	if err != nil || code != 0 || out.String() != "/tmp|x y|=q" {
		t.Errorf("env + workdir: code %d, err %v, %q", code, err, out.String())
	}

	out.Reset()
	// (with an open stdin and short sleeps: the plane's kwok cannot serve a tty without
	// stdin, and drops output written as the command starts)
	inR, inW := io.Pipe()
	code, err = c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"sh", "-c", `sleep 0.3; [ -t 1 ] && echo tty; echo e >&2; sleep 0.3`},
		TTY: true, Stdin: inR, Stdout: &out})
	inW.Close()
	if err != nil || code != 0 || !strings.Contains(out.String(), "tty") || !strings.Contains(out.String(), "e") {
		t.Errorf("tty: code %d, err %v, %q", code, err, out.String())
	}

	start := time.Now()
	code, err = c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"sleep", "30"}, Timeout: 2 * time.Second})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 15*time.Second {
		t.Errorf("timeout: code %d, err %v after %v", code, err, time.Since(start))
	}

	if code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"/no/such/program"}}); err == nil && code == 0 {
		t.Errorf("a missing program ran: %d", code)
	}
}

// TestITHeartbeat: a session with a 4 s idle timeout survives a 10 s command (Exec's
// heartbeat keeps last-used-at fresh, throttled to one write per ~1.3 s) and is removed
// for idleness once nothing uses it.
func TestITHeartbeat(t *testing.T) {
	c := itClient(t)
	spec := itSpec(t, v1alpha1.LifecycleSession)
	spec.IdleTimeout = "4s"
	sb := ready(t, c, "beat"+run, "c", spec)
	ctx := ctxFor(t, 2*time.Minute)
	code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"sleep", "10"}})
	if err != nil || code != 0 {
		t.Fatalf("a 10 s command in a 4 s-idle session: code %d, err %v", code, err)
	}
	after, err := c.Get(ctx, sb.Name)
	if err != nil {
		t.Fatalf("the session was removed while in use: %v", err)
	}
	if after.UID != sb.UID || after.Status.PodName != sb.Status.PodName {
		t.Fatalf("the session was replaced while in use")
	}
	used, err := time.Parse(time.RFC3339, after.Annotations[v1alpha1.AnnotationLastUsedAt])
	if err != nil || time.Since(used) > 5*time.Second {
		t.Errorf("last-used-at %q is not fresh (%v)", after.Annotations[v1alpha1.AnnotationLastUsedAt], err)
	}
	// Unused now: the controller removes it (4 s idle) — the heartbeat has stopped.
	if err := c.WaitGone(ctx, sb.Name, sb.UID); err != nil {
		t.Errorf("the idle session was not removed: %v", err)
	}
}

// TestITKeepAliveClassPolicy: a session of the SandboxClass YAO_GO_IT_KEEPALIVE_CLASS,
// with no spec.idleTimeout of its own, for user YAO_GO_IT_KEEPALIVE_USER, runs a 15 s
// command; the class's idle timeout or reclaim window (shorter than 15 s) must not end it
// meanwhile: the command finishes, and the same Sandbox is still Running on the same pod.
// Run by tests/integration/test_keepalive.sh (which makes the class and checks the
// workspace claim afterwards: the Sandbox is left for it); skipped otherwise.
func TestITKeepAliveClassPolicy(t *testing.T) {
	class, user := os.Getenv("YAO_GO_IT_KEEPALIVE_CLASS"), os.Getenv("YAO_GO_IT_KEEPALIVE_USER")
	if class == "" || user == "" {
		t.Skip("set YAO_GO_IT_KEEPALIVE_CLASS and YAO_GO_IT_KEEPALIVE_USER (tests/integration/test_keepalive.sh does)")
	}
	c := itClient(t)
	spec := itSpec(t, v1alpha1.LifecycleSession)
	spec.ClassName = class
	ctx := ctxFor(t, 2*time.Minute)
	sb, _, err := c.GetOrCreate(ctx, sandbox.Request{UserID: user, ChatID: "c", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if sb, err = c.WaitReady(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	t.Logf("sandbox %s: status.idleTimeout %q, status.reclaimAfter %q, touch every %v", sb.Name,
		sb.Status.IdleTimeout, sb.Status.ReclaimAfter, sandbox.TouchInterval(sandbox.KeepAliveWindow(sb)))
	if w := sandbox.KeepAliveWindow(sb); w <= 0 || w >= 15*time.Second {
		t.Errorf("the published window is %v (status %+v): not the class's", w, sb.Status)
	}
	var out bytes.Buffer
	code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{
		Command: []string{"sh", "-c", "sleep 15; echo finished"}, Stdout: &out})
	if err != nil || code != 0 || out.String() != "finished\n" {
		t.Fatalf("a 15 s command: code %d, err %v, output %q", code, err, out.String())
	}
	after, err := c.Get(ctx, sb.Name)
	if err != nil {
		t.Fatalf("the session was removed while in use: %v", err)
	}
	if after.UID != sb.UID || after.Status.PodName != sb.Status.PodName || after.Status.Phase != v1alpha1.PhaseRunning {
		reason := ""
		if rc := after.ReadyCondition(); rc != nil {
			reason = rc.Reason
		}
		t.Fatalf("the session was stopped or replaced while in use: phase %s, reason %s", after.Status.Phase, reason)
	}
}

// TestITStopStart: stop, then Exec starts it again with the same workspace claim.
func TestITStopStart(t *testing.T) {
	c := itClient(t)
	sb := ready(t, c, "stop"+run, "c", itSpec(t, v1alpha1.LifecycleLongRunning))
	ctx := ctxFor(t, 2*time.Minute)
	if _, err := c.Stop(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	stopped, err := c.WaitStopped(ctx, sb.Name)
	if err != nil || stopped.Status.Phase != v1alpha1.PhaseStopped || !stopped.Spec.Paused {
		t.Fatalf("WaitStopped: %v", err)
	}
	var out bytes.Buffer
	code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"echo", "woke"}, Stdout: &out})
	if err != nil || code != 0 || out.String() != "woke\n" {
		t.Fatalf("exec on a stopped sandbox: %d, %v, %q", code, err, out.String())
	}
	again, err := c.Get(ctx, sb.Name)
	if err != nil || again.Spec.Paused || again.Status.WorkspaceClaim != sb.Status.WorkspaceClaim || again.UID != sb.UID {
		t.Errorf("after the wake: paused %v, claim %q (was %q), %v", again.Spec.Paused, again.Status.WorkspaceClaim, sb.Status.WorkspaceClaim, err)
	}
	if _, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"true"}, NoStart: true}); err != nil {
		t.Errorf("NoStart on a running sandbox: %v", err)
	}
	if err := c.Remove(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitGone(ctx, sb.Name, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx, sb.Name); err != nil {
		t.Errorf("removing a removed sandbox: %v", err)
	}
	if _, err := c.Get(ctx, sb.Name); !sandbox.IsNotFound(err) {
		t.Errorf("Get after removal: %v", err)
	}
}

// TestITFiles: the file helpers, binary-safe, with spaces and hidden names.
func TestITFiles(t *testing.T) {
	c := itClient(t)
	sb := ready(t, c, "files"+run, "c", itSpec(t, v1alpha1.LifecyclePersistent))
	ctx := ctxFor(t, 2*time.Minute)
	dir := "t " + run // relative: below the workspace
	data := make([]byte, 1<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte("\x00\r\n\xff")...)
	file := dir + "/sub dir/a file.bin"
	if err := c.WriteFile(ctx, sb.Name, file, data); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.RemoveAll(context.Background(), sb.Name, dir) })
	got, err := c.ReadFile(ctx, sb.Name, file)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile: %d bytes of %d, %v", len(got), len(data), err)
	}
	abs := path.Join(os.Getenv("YAO_GO_IT_ROOT"), file)
	if got, err := c.ReadFile(ctx, sb.Name, abs); err != nil || !bytes.Equal(got, data) {
		t.Errorf("ReadFile by absolute path: %v", err)
	}
	if err := c.WriteFileFrom(ctx, sb.Name, dir+"/.hidden", strings.NewReader("#!/bin/sh\n"), sandbox.WriteOptions{Mode: 0o750}); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFileFrom(ctx, sb.Name, dir+"/no/parent", strings.NewReader("x"), sandbox.WriteOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write without parents into a missing directory: %v", err)
	}

	fi, err := c.Stat(ctx, sb.Name, file)
	if err != nil || fi.Size != int64(len(data)) || fi.IsDir() || fi.Name != "a file.bin" || fi.Path != abs ||
		time.Since(fi.ModTime) > time.Minute {
		t.Errorf("Stat: %+v, %v", fi, err)
	}
	if fi, err := c.Stat(ctx, sb.Name, dir+"/.hidden"); err != nil || fi.Mode.Perm() != 0o750 {
		t.Errorf("Stat .hidden: %+v, %v", fi, err)
	}
	if _, err := c.Stat(ctx, sb.Name, dir+"/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat missing: %v", err)
	}

	if err := c.Mkdir(ctx, sb.Name, dir+"/made", false); err != nil {
		t.Fatal(err)
	}
	if err := c.Mkdir(ctx, sb.Name, dir+"/made", false); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Mkdir of an existing directory: %v", err)
	}
	if err := c.Mkdir(ctx, sb.Name, dir+"/made/x/y", true); err != nil {
		t.Errorf("Mkdir -p: %v", err)
	}
	ents, err := c.ReadDir(ctx, sb.Name, dir)
	var names []string
	for _, e := range ents {
		names = append(names, fmt.Sprintf("%s:%v", e.Name, e.IsDir()))
	}
	if err != nil || strings.Join(names, ",") != ".hidden:false,made:true,sub dir:true" {
		t.Errorf("ReadDir: %q, %v", names, err)
	}

	if err := c.RemoveFile(ctx, sb.Name, dir+"/made"); err == nil {
		t.Error("RemoveFile of a non-empty directory succeeded")
	}
	if err := c.RemoveFile(ctx, sb.Name, dir+"/.hidden"); err != nil {
		t.Errorf("RemoveFile: %v", err)
	}
	if err := c.RemoveFile(ctx, sb.Name, dir+"/.hidden"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RemoveFile of a missing file: %v", err)
	}
	if err := c.RemoveAll(ctx, sb.Name, dir+"/made"); err != nil {
		t.Errorf("RemoveAll: %v", err)
	}
	if err := c.RemoveAll(ctx, sb.Name, dir+"/made"); err != nil {
		t.Errorf("RemoveAll of a missing path: %v", err)
	}
	for _, root := range []string{"", ".", "/", os.Getenv("YAO_GO_IT_ROOT")} {
		if err := c.RemoveAll(ctx, sb.Name, root); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("RemoveAll(%q): %v, want a refusal", root, err)
		}
	}
	if _, err := c.ReadFile(ctx, sb.Name, dir+"/made/x/y"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read after RemoveAll: %v", err)
	}
}

package sandboxfake_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox/sandboxfake"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate(t *testing.T, f *sandboxfake.Fake, user, chat string) *v1alpha1.Sandbox {
	t.Helper()
	sb, created, err := f.GetOrCreate(ctxFor(t), sandbox.Request{UserID: user, ChatID: chat})
	if err != nil || !created {
		t.Fatalf("GetOrCreate(%s, %s): %v, created %v", user, chat, err, created)
	}
	return sb
}

func readyReason(sb *v1alpha1.Sandbox) string {
	if c := sb.ReadyCondition(); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return "none"
}

// The API server's part: names, errors of the kinds client-go gives, metadata, status
// not written by clients, label and field selection.
func TestObjects(t *testing.T) {
	ctx := ctxFor(t)
	f := sandboxfake.New(sandboxfake.Options{Namespace: "yao"})
	if f.Namespace() != "yao" {
		t.Errorf("namespace %q", f.Namespace())
	}
	sb := mustCreate(t, f, "alice", "c1")
	if sb.Name != "yao-sb-alice-c1" || sb.Namespace != "yao" || sb.UID == "" || sb.ResourceVersion == "" || sb.CreationTimestamp.IsZero() {
		t.Errorf("created %s/%s uid %q rv %q", sb.Namespace, sb.Name, sb.UID, sb.ResourceVersion)
	}
	if sb.Status.Phase != "" {
		t.Errorf("Create's answer has a status already: %+v", sb.Status)
	}
	again, created, err := f.GetOrCreate(ctx, sandbox.Request{UserID: "alice", ChatID: "c1", Spec: v1alpha1.SandboxSpec{Image: "other"}})
	if err != nil || created || again.UID != sb.UID || again.Spec.Image != "" {
		t.Errorf("second GetOrCreate: created %v, %v, uid %s", created, err, again.UID)
	}
	if again.ResourceVersion == sb.ResourceVersion {
		t.Error("the controller's status write did not change the resourceVersion")
	}
	hashed := mustCreate(t, f, "Alice Smith", "Chat #1")
	if want, _ := sandbox.PodName("Alice Smith", "Chat #1"); hashed.Name != want {
		t.Errorf("hashed name %q, want %q", hashed.Name, want)
	}

	// Errors: the kinds of the real client.
	_, err = f.Get(ctx, "nope")
	var st apierrors.APIStatus
	if !sandbox.IsNotFound(err) || !errors.As(err, &st) || st.Status().Details.Group != v1alpha1.GroupName {
		t.Errorf("Get(missing): %v", err)
	}
	in := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: sb.Name}, Spec: v1alpha1.SandboxSpec{UserID: "alice", ChatID: "c1"},
		Status: v1alpha1.SandboxStatus{Phase: v1alpha1.PhaseRunning}}
	if _, err := f.Create(ctx, in); !apierrors.IsAlreadyExists(err) {
		t.Errorf("Create(taken): %v", err)
	}
	if _, err := f.Create(ctx, &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}); !apierrors.IsBadRequest(err) {
		t.Errorf("Create(bad name): %v", err)
	}
	// A hand-made Sandbox on alice's canonical name for another chat: a conflict.
	name, _ := sandbox.PodName("alice", "c9")
	in = &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "a"}},
		Spec: v1alpha1.SandboxSpec{UserID: "mallory", ChatID: "x"}, Status: v1alpha1.SandboxStatus{Phase: v1alpha1.PhaseFailed}}
	out, err := f.Create(ctx, in)
	if err != nil || out.Status.Phase != "" {
		t.Fatalf("Create: %v (status %+v: should be dropped)", err, out.Status)
	}
	var ce *sandbox.ConflictError
	if _, _, err := f.GetOrCreate(ctx, sandbox.Request{UserID: "alice", ChatID: "c9"}); !errors.As(err, &ce) || ce.OwnerUserID != "mallory" {
		t.Errorf("GetOrCreate on a stranger's name: %v", err)
	}
	if _, err := f.GetFor(ctx, "alice", "c9"); !errors.As(err, &ce) {
		t.Errorf("GetFor on a stranger's name: %v", err)
	}

	// Selection.
	names := func(l []v1alpha1.Sandbox, err error) string {
		if err != nil {
			return err.Error()
		}
		var s []string
		for _, sb := range l {
			s = append(s, sb.Name)
		}
		return strings.Join(s, ",")
	}
	if got := names(f.ListByUser(ctx, "alice")); got != "yao-sb-alice-c1" {
		t.Errorf("ListByUser(alice): %s", got)
	}
	if got := names(f.List(ctx, sandbox.ListOptions{LabelSelector: "team=a"})); got != name {
		t.Errorf("List(team=a): %s", got)
	}
	if got := names(f.List(ctx, sandbox.ListOptions{})); strings.Count(got, ",") != 2 {
		t.Errorf("List(): %s", got)
	}
	if _, err := f.List(ctx, sandbox.ListOptions{LabelSelector: "a in ("}); !apierrors.IsBadRequest(err) {
		t.Errorf("bad selector: %v", err)
	}
	if _, err := f.ListByUser(ctx, ""); !errors.Is(err, sandbox.ErrInvalidID) {
		t.Errorf("ListByUser(\"\"): %v", err)
	}

	// SetError injects any API error.
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "sandboxes"}, "x", errors.New("no"))
	f.SetError(sandboxfake.OpList, forbidden)
	if _, err := f.List(ctx, sandbox.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("injected: %v", err)
	}
	f.SetError(sandboxfake.OpList, nil)
	if _, err := f.List(ctx, sandbox.ListOptions{}); err != nil {
		t.Errorf("after clearing: %v", err)
	}

	// Remove: gone at once; twice is fine.
	if err := f.Remove(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctx, sb.Name); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if _, err := f.Get(ctx, sb.Name); !sandbox.IsNotFound(err) {
		t.Errorf("Get after Remove: %v", err)
	}
	if err := f.WaitGone(ctx, sb.Name, sb.UID); err != nil {
		t.Errorf("WaitGone: %v", err)
	}
}

// The controller's part, automatic: Running with a pod named like the Sandbox; paused is
// Stopped; a use starts it again; waits see it.
func TestLifecycleAuto(t *testing.T) {
	ctx := ctxFor(t)
	f := sandboxfake.New(sandboxfake.Options{})
	sb := mustCreate(t, f, "bob", "c1")
	got, err := f.WaitReady(ctx, sb.Name)
	if err != nil || !got.IsRunning() || got.Status.PodName != sb.Name || readyReason(got) != "True/"+v1alpha1.ReasonPodReady ||
		got.Status.Lifecycle != v1alpha1.LifecycleSession || got.Status.StartedAt == nil {
		t.Fatalf("WaitReady: %v %+v", err, got.Status)
	}
	if _, err := f.Stop(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	got, err = f.WaitStopped(ctx, sb.Name)
	if err != nil || got.Status.Phase != v1alpha1.PhaseStopped || got.Status.PodName != "" || readyReason(got) != "False/"+v1alpha1.ReasonPaused {
		t.Fatalf("WaitStopped: %v %+v", err, got.Status)
	}
	var nr *sandbox.NotReadyError
	if _, err := f.WaitReady(ctx, sb.Name); !errors.As(err, &nr) || nr.Err != nil {
		t.Errorf("WaitReady on a paused one: %v (should give up at once)", err)
	}
	if _, err := f.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"true"}, NoStart: true}); !errors.As(err, &nr) {
		t.Errorf("Exec NoStart on a stopped one: %v", err)
	}
	// Exec starts it (and marks it used).
	f.SetExecResult(nil, sandboxfake.ExecResult{})
	if code, err := f.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"true"}}); err != nil || code != 0 {
		t.Fatalf("Exec on a stopped one: %d, %v", code, err)
	}
	got, _ = f.Get(ctx, sb.Name)
	if !got.IsRunning() || got.Spec.Paused || got.Annotations[v1alpha1.AnnotationLastUsedAt] == "" {
		t.Errorf("after Exec: %+v, annotations %v", got.Status, got.Annotations)
	}
	// Stopped for idleness by "the controller": a use wakes it.
	if err := f.SetStopped(sb.Name, v1alpha1.ReasonIdle, "idle for 30m"); err != nil {
		t.Fatal(err)
	}
	if got, err := f.EnsureRunning(ctx, sb.Name); err != nil || !got.IsRunning() {
		t.Errorf("EnsureRunning after idle: %v", err)
	}
	// A final state ends WaitReady at once; one held Pending is not started by a use.
	if err := f.SetPending(sb.Name, v1alpha1.ReasonInvalidSpec, "spec.image: empty"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WaitReady(ctx, sb.Name); !errors.As(err, &nr) || nr.Reason != v1alpha1.ReasonInvalidSpec || nr.Err != nil {
		t.Errorf("WaitReady(InvalidSpec): %v", err)
	}
	if err := f.SetPending(sb.Name, v1alpha1.ReasonCapacityExceeded, "3 of 3 running"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := f.EnsureRunning(short, sb.Name); !errors.As(err, &nr) || nr.Reason != v1alpha1.ReasonCapacityExceeded ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("EnsureRunning while held Pending: %v", err)
	}
	// Update: anything, e.g. a finished one-shot.
	if err := f.Update(sb.Name, func(sb *v1alpha1.Sandbox) { sb.Status.Phase = v1alpha1.PhaseSucceeded; sb.Status.PodName = "" }); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WaitReady(ctx, sb.Name); !errors.As(err, &nr) || !strings.Contains(err.Error(), "finished") {
		t.Errorf("WaitReady(Succeeded): %v", err)
	}
	if got, err := f.WaitStopped(ctx, sb.Name); err != nil || got.Status.Phase != v1alpha1.PhaseSucceeded {
		t.Errorf("WaitStopped(Succeeded): %v", err)
	}
	if err := f.Update("nope", func(*v1alpha1.Sandbox) {}); !sandbox.IsNotFound(err) {
		t.Errorf("Update(missing): %v", err)
	}
}

// Manual: the test moves the state; waits block until it does, and end on deletion.
func TestLifecycleManual(t *testing.T) {
	ctx := ctxFor(t)
	f := sandboxfake.New(sandboxfake.Options{Manual: true})
	sb := mustCreate(t, f, "carol", "c1")
	got, _ := f.Get(ctx, sb.Name)
	if got.Status.Phase != v1alpha1.PhasePending || got.Status.PodName != "" {
		t.Fatalf("manual: %+v", got.Status)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.WaitReady(ctx, sb.Name)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("WaitReady returned before SetRunning: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := f.SetRunning(sb.Name); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	// Stop sets paused; in manual mode it stays Running until the test stops it.
	if _, err := f.Stop(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := f.WaitStopped(ctx, sb.Name)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	_ = f.SetStopped(sb.Name, v1alpha1.ReasonPaused, "")
	if err := <-done; err != nil {
		t.Fatalf("WaitStopped: %v", err)
	}
	// A deletion ends a wait with sandbox.ErrDeleted (started again: a paused one would
	// end the wait at once).
	if _, err := f.Start(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := f.WaitReady(ctx, sb.Name)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	_ = f.Remove(ctx, sb.Name)
	if err := <-done; !errors.Is(err, sandbox.ErrDeleted) {
		t.Fatalf("WaitReady across Remove: %v", err)
	}
	// Add: a fixture as given.
	fixture := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: v1alpha1.SandboxSpec{UserID: "u", ChatID: "c", Paused: true},
		Status: v1alpha1.SandboxStatus{Phase: v1alpha1.PhaseStopped}}
	if err := f.Add(fixture); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Get(ctx, "old"); err != nil || got.Status.Phase != v1alpha1.PhaseStopped || got.UID == "" {
		t.Errorf("Add: %v %+v", err, got)
	}
	if err := f.Add(fixture); !apierrors.IsAlreadyExists(err) {
		t.Errorf("Add twice: %v", err)
	}
}

// Exec: scripted results (longest prefix, per Sandbox), streams, stdin, TTY, a handler,
// ctx and Timeout, the calls recorded.
func TestExec(t *testing.T) {
	ctx := ctxFor(t)
	f := sandboxfake.New(sandboxfake.Options{})
	a := mustCreate(t, f, "dave", "a")
	b := mustCreate(t, f, "dave", "b")
	f.SetExecResult([]string{"python3"}, sandboxfake.ExecResult{Stdout: "any python\n"})
	f.SetExecResult([]string{"python3", "main.py"}, sandboxfake.ExecResult{Stdout: "main\n", Stderr: "warn\n", ExitCode: 2})
	f.SetExecResultIn(b.Name, []string{"python3"}, sandboxfake.ExecResult{Stdout: "python in b\n"})
	run := func(name string, opts sandbox.ExecOptions) (int, string, string, error) {
		var out, errb bytes.Buffer
		opts.Stdout, opts.Stderr = &out, &errb
		code, err := f.Exec(ctx, name, opts)
		return code, out.String(), errb.String(), err
	}
	if code, out, errs, err := run(a.Name, sandbox.ExecOptions{Command: []string{"python3", "main.py", "-v"}}); code != 2 || out != "main\n" || errs != "warn\n" || err != nil {
		t.Errorf("longest prefix: %d %q %q %v", code, out, errs, err)
	}
	if _, out, _, _ := run(a.Name, sandbox.ExecOptions{Command: []string{"python3", "other.py"}}); out != "any python\n" {
		t.Errorf("shorter prefix: %q", out)
	}
	if _, out, _, _ := run(b.Name, sandbox.ExecOptions{Command: []string{"python3", "x.py"}}); out != "python in b\n" {
		t.Errorf("per sandbox: %q", out)
	}
	// TTY merges stderr into stdout.
	if _, out, errs, _ := run(a.Name, sandbox.ExecOptions{Command: []string{"python3", "main.py"}, TTY: true}); out != "main\nwarn\n" || errs != "" {
		t.Errorf("tty: %q %q", out, errs)
	}
	// Unscripted: an error naming it.
	if _, _, _, err := run(a.Name, sandbox.ExecOptions{Command: []string{"ls"}}); !errors.Is(err, sandboxfake.ErrNotScripted) || !strings.Contains(err.Error(), "ls") {
		t.Errorf("unscripted: %v", err)
	}
	if _, _, _, err := run(a.Name, sandbox.ExecOptions{}); err == nil {
		t.Error("no command accepted")
	}
	if _, _, _, err := run(a.Name, sandbox.ExecOptions{Command: []string{"x"}, Env: map[string]string{"A=B": "c"}}); err == nil {
		t.Error("a bad variable name accepted")
	}
	if _, _, _, err := run("nope", sandbox.ExecOptions{Command: []string{"python3"}}); !sandbox.IsNotFound(err) {
		t.Errorf("missing sandbox: %v", err)
	}
	// Stdin is read and recorded.
	f.SetExecResult([]string{"cat"}, sandboxfake.ExecResult{Stdout: "ok"})
	if _, _, _, err := run(a.Name, sandbox.ExecOptions{Command: []string{"cat"}, Stdin: strings.NewReader("input bytes"),
		Env: map[string]string{"K": "V"}, WorkDir: "/w"}); err != nil {
		t.Fatal(err)
	}
	calls := f.ExecCalls()
	last := calls[len(calls)-1]
	if string(last.Stdin) != "input bytes" || last.Env["K"] != "V" || last.WorkDir != "/w" || last.Pod != a.Name || last.Sandbox != a.Name {
		t.Errorf("recorded call: %+v", last)
	}

	// A handler for the rest: it gets the streams.
	f.SetExecHandler(func(ctx context.Context, call *sandboxfake.ExecCall, io sandboxfake.ExecIO) (int, error) {
		if call.Command[0] != "wc" {
			return 127, nil
		}
		n := 0
		sc := bufio.NewScanner(io.Stdin)
		for sc.Scan() {
			n++
		}
		fmt.Fprintln(io.Stdout, n)
		return 0, nil
	})
	if code, out, _, err := run(a.Name, sandbox.ExecOptions{Command: []string{"wc", "-l"}, Stdin: strings.NewReader("1\n2\n3\n")}); code != 0 || out != "3\n" || err != nil {
		t.Errorf("handler: %d %q %v", code, out, err)
	}
	if code, _, _, _ := run(a.Name, sandbox.ExecOptions{Command: []string{"nope"}}); code != 127 {
		t.Errorf("handler's 127: %d", code)
	}

	// ctx and Timeout end a long command: ctx's error, -1, recorded as Ended and Killed
	// (not Killed with KeepRunning).
	f.SetExecResult([]string{"sleep"}, sandboxfake.ExecResult{Duration: time.Hour})
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(30 * time.Millisecond); cancel() }()
	t0 := time.Now()
	if code, err := f.Exec(cctx, a.Name, sandbox.ExecOptions{Command: []string{"sleep", "300"}}); code != -1 || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %d %v", code, err)
	}
	if time.Since(t0) > 5*time.Second {
		t.Errorf("cancel took %v", time.Since(t0))
	}
	calls = f.ExecCalls()
	if last := calls[len(calls)-1]; !last.Ended || !last.Killed {
		t.Errorf("cancelled call: %+v", last)
	}
	if _, err := f.Exec(ctx, a.Name, sandbox.ExecOptions{Command: []string{"sleep", "300"}, Timeout: 20 * time.Millisecond, KeepRunning: true}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: %v", err)
	}
	calls = f.ExecCalls()
	if last := calls[len(calls)-1]; !last.Ended || last.Killed {
		t.Errorf("KeepRunning call: %+v", last)
	}
	// A scripted error (e.g. the sandbox stopped under the command) comes back as is.
	stopped := &sandbox.StoppedError{Name: a.Name, Why: "was stopped while the command ran"}
	f.SetExecResult([]string{"long"}, sandboxfake.ExecResult{ExitCode: 137, Err: stopped})
	var se *sandbox.StoppedError
	if code, err := f.Exec(ctx, a.Name, sandbox.ExecOptions{Command: []string{"long"}}); code != 137 || !errors.As(err, &se) {
		t.Errorf("scripted error: %d %v", code, err)
	}
	f.SetError(sandboxfake.OpExec, errors.New("connection refused"))
	if _, err := f.Exec(ctx, a.Name, sandbox.ExecOptions{Command: []string{"cat"}}); err == nil || err.Error() != "connection refused" {
		t.Errorf("injected exec error: %v", err)
	}
}

// Files: an in-memory tree with the Client's errors; the workspace outlives a pod, the
// rest does not.
func TestFiles(t *testing.T) {
	ctx := ctxFor(t)
	f := sandboxfake.New(sandboxfake.Options{})
	sb := mustCreate(t, f, "erin", "c1")
	n := sb.Name
	if err := f.WriteFile(ctx, n, "app/src/main.py", []byte("print(1)")); err != nil {
		t.Fatal(err)
	}
	if b, err := f.ReadFile(ctx, n, "/workspace/app/src/main.py"); err != nil || string(b) != "print(1)" {
		t.Errorf("ReadFile: %q %v", b, err)
	}
	var buf bytes.Buffer
	if err := f.ReadFileTo(ctx, n, "app/src/main.py", &buf); err != nil || buf.String() != "print(1)" {
		t.Errorf("ReadFileTo: %q %v", buf.String(), err)
	}
	var fe *sandbox.FileError
	if _, err := f.ReadFile(ctx, n, "missing"); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &fe) || fe.Path != "/workspace/missing" {
		t.Errorf("ReadFile(missing): %v", err)
	}
	if _, err := f.ReadFile(ctx, n, "app"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(dir): %v", err)
	}
	if err := f.WriteFileFrom(ctx, n, "no/parent/x", strings.NewReader("x"), sandbox.WriteOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write without parents: %v", err)
	}
	if err := f.WriteFileFrom(ctx, n, "run.sh", strings.NewReader("#!/bin/sh"), sandbox.WriteOptions{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if fi, err := f.Stat(ctx, n, "run.sh"); err != nil || fi.Mode != 0o755 || fi.Size != 9 || fi.Name != "run.sh" || fi.IsDir() {
		t.Errorf("Stat(run.sh): %+v %v", fi, err)
	}
	if err := f.Mkdir(ctx, n, "app", false); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Mkdir(existing): %v", err)
	}
	if err := f.Mkdir(ctx, n, "app", true); err != nil {
		t.Errorf("Mkdir -p (existing): %v", err)
	}
	if err := f.Mkdir(ctx, n, "a/b", false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Mkdir without parent: %v", err)
	}
	if err := f.Mkdir(ctx, n, "a/b", true); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(ctx, n, "run.sh/x", nil); err == nil {
		t.Error("wrote below a file")
	}
	entries, err := f.ReadDir(ctx, n, "")
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s:%v", e.Name, e.IsDir()))
	}
	if err != nil || strings.Join(got, " ") != "a:true app:true run.sh:false" {
		t.Errorf("ReadDir(workspace): %v %v", got, err)
	}
	if one, err := f.ReadDir(ctx, n, "run.sh"); err != nil || len(one) != 1 || one[0].Name != "run.sh" {
		t.Errorf("ReadDir(file): %+v %v", one, err)
	}
	if err := f.RemoveFile(ctx, n, "app"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RemoveFile(non-empty dir): %v", err)
	}
	if err := f.RemoveFile(ctx, n, "gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RemoveFile(missing): %v", err)
	}
	if err := f.RemoveAll(ctx, n, "app"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(ctx, n, "app/src/main.py"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after RemoveAll: %v", err)
	}
	if err := f.RemoveAll(ctx, n, "gone"); err != nil {
		t.Errorf("RemoveAll(missing): %v", err)
	}
	for _, p := range []string{"/", "/workspace", "."} {
		if err := f.RemoveAll(ctx, n, p); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("RemoveAll(%q): %v", p, err)
		}
	}
	// A new pod: /tmp is empty again, the workspace is kept.
	if err := f.WriteFile(ctx, n, "/tmp/scratch", []byte("x")); err != nil {
		t.Fatal(err)
	}
	_, _ = f.Stop(ctx, n)
	if err := f.WriteFile(ctx, n, "kept", []byte("y")); err != nil { // starts it again
		t.Fatal(err)
	}
	if _, err := f.Stat(ctx, n, "/tmp/scratch"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("/tmp survived a new pod: %v", err)
	}
	if _, err := f.Stat(ctx, n, "run.sh"); err != nil {
		t.Errorf("the workspace lost a file: %v", err)
	}
	if _, err := f.ReadFile(ctx, "nope", "x"); !sandbox.IsNotFound(err) {
		t.Errorf("files of a missing sandbox: %v", err)
	}
}

// Logs: tail, timestamps, limit, follow until the pod goes; no pod is NotReady.
func TestLogs(t *testing.T) {
	ctx := ctxFor(t)
	f := sandboxfake.New(sandboxfake.Options{})
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	var mu sync.Mutex
	f.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sb := mustCreate(t, f, "frank", "c1")
	_ = f.AppendLogs(sb.Name, "one\ntwo\nthree\n")
	read := func(opts sandbox.LogOptions) string {
		rc, err := f.Logs(ctx, sb.Name, opts)
		if err != nil {
			return "error: " + err.Error()
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return string(b)
	}
	if got := read(sandbox.LogOptions{}); got != "one\ntwo\nthree\n" {
		t.Errorf("all: %q", got)
	}
	if got := read(sandbox.LogOptions{TailLines: 2, Timestamps: true}); got != "2030-05-06T07:08:09Z two\n2030-05-06T07:08:09Z three\n" {
		t.Errorf("tail 2 with timestamps: %q", got)
	}
	if got := read(sandbox.LogOptions{LimitBytes: 5}); got != "one\nt" {
		t.Errorf("limit 5: %q", got)
	}
	if got := read(sandbox.LogOptions{SinceTime: now.Add(time.Second)}); got != "" {
		t.Errorf("since later: %q", got)
	}
	rc, err := f.Logs(ctx, sb.Name, sandbox.LogOptions{Follow: true, TailLines: 1})
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if l := <-lines; l != "three" {
		t.Errorf("follow, first line %q", l)
	}
	_ = f.AppendLogs(sb.Name, "four\n")
	if l := <-lines; l != "four" {
		t.Errorf("follow, appended %q", l)
	}
	_, _ = f.Stop(ctx, sb.Name) // the container ends: so does the stream
	select {
	case l, ok := <-lines:
		if ok {
			t.Errorf("follow after stop: %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Error("follow did not end when the sandbox stopped")
	}
	rc.Close()
	var nr *sandbox.NotReadyError
	if _, err := f.Logs(ctx, sb.Name, sandbox.LogOptions{}); !errors.As(err, &nr) {
		t.Errorf("logs without a pod: %v", err)
	}
	if _, err := f.Logs(ctx, "nope", sandbox.LogOptions{}); !sandbox.IsNotFound(err) {
		t.Errorf("logs of a missing sandbox: %v", err)
	}
	if _, err := f.Logs(ctx, sb.Name, sandbox.LogOptions{TailLines: -1}); err == nil {
		t.Error("negative TailLines accepted")
	}
}

// PortForward: connections reach the port's handler; an unserved port ends the forward;
// ctx ends it.
func TestPortForward(t *testing.T) {
	ctx := ctxFor(t)
	f := sandboxfake.New(sandboxfake.Options{})
	sb := mustCreate(t, f, "gina", "c1")
	f.HandlePort(8080, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprintf(c, "echo %s", line)
	})
	fctx, stop := context.WithCancel(ctx)
	port, err := f.PortForward(fctx, sb.Name, 0, 8080)
	if err != nil || port <= 0 {
		t.Fatalf("PortForward: %d %v", port, err)
	}
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "hi %d\n", i)
		b, _ := io.ReadAll(c)
		c.Close()
		if string(b) != fmt.Sprintf("echo hi %d\n", i) {
			t.Errorf("connection %d: %q", i, b)
		}
	}
	stop()
	closed := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			closed = true
			break
		}
		c.Close()
	}
	if !closed {
		t.Error("the local port still accepts after ctx ended")
	}
	dead, err := f.PortForward(ctx, sb.Name, 0, 9)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", dead)); err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if n, _ := c.Read(make([]byte, 1)); n != 0 {
			t.Error("data from a port nobody listens on")
		}
		c.Close()
	}
	if _, err := f.PortForward(ctx, sb.Name, 0, 0); err == nil {
		t.Error("remote port 0 accepted")
	}
}

// MarkUsed is throttled to the touch interval, as the Client's; Touch always writes.
func TestMarkUsed(t *testing.T) {
	ctx := ctxFor(t)
	f := sandboxfake.New(sandboxfake.Options{})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Now = func() time.Time { return now }
	sb, _, err := f.GetOrCreate(ctx, sandbox.Request{UserID: "hal", ChatID: "c1", Spec: v1alpha1.SandboxSpec{IdleTimeout: "30s"}})
	if err != nil {
		t.Fatal(err)
	}
	stamp := func() string {
		got, _ := f.Get(ctx, sb.Name)
		return got.Annotations[v1alpha1.AnnotationLastUsedAt]
	}
	if wrote, err := f.MarkUsed(ctx, sb.Name); !wrote || err != nil || stamp() != "2030-01-01T00:00:00Z" {
		t.Fatalf("first MarkUsed: %v %v %q", wrote, err, stamp())
	}
	now = now.Add(9 * time.Second) // the interval of 30 s is 10 s
	if wrote, _ := f.MarkUsed(ctx, sb.Name); wrote {
		t.Error("wrote within the interval")
	}
	now = now.Add(time.Second)
	if wrote, _ := f.MarkUsed(ctx, sb.Name); !wrote || stamp() != "2030-01-01T00:00:10Z" {
		t.Errorf("no write after the interval: %q", stamp())
	}
	now = now.Add(time.Second)
	if err := f.Touch(ctx, sb.Name); err != nil || stamp() != "2030-01-01T00:00:11Z" {
		t.Errorf("Touch: %v %q", err, stamp())
	}
	stopBeat := f.Heartbeat(ctx, sb.Name, func(err error) { t.Error(err) })
	stopBeat()
	if _, err := f.MarkUsed(ctx, "nope"); !sandbox.IsNotFound(err) {
		t.Errorf("MarkUsed(missing): %v", err)
	}
}

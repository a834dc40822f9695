package yaoruntime_test

// The adapter over sandbox/sandboxfake: what Yao's tests can do without a cluster.

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox/sandboxfake"
	"github.com/yaoapp/yao-sandbox/clients/go/yaoruntime"
)

func TestRuntimeOverTheFake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := sandboxfake.New(sandboxfake.Options{Namespace: "yao"})
	r := yaoruntime.New(f, yaoruntime.Options{})
	id, err := r.Create(ctx, yaoruntime.CreateOptions{UserID: "alice", ChatID: "c1", WorkingDir: "/workspace/app",
		Env: map[string]string{"A": "1"}, Labels: map[string]string{"team": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	info, err := r.Inspect(ctx, id)
	if err != nil || info.Status != "running" || info.IP == "" || info.Labels["team"] != "x" {
		t.Errorf("Inspect: %+v %v", info, err)
	}
	f.SetExecResult([]string{"python3"}, sandboxfake.ExecResult{Stdout: "4\n", Stderr: "w\n", ExitCode: 1})
	res, err := r.Exec(ctx, id, []string{"python3", "-c", "print(2+2)"}, yaoruntime.ExecOptions{})
	if err != nil || res.ExitCode != 1 || res.Stdout != "4\n" || res.Stderr != "w\n" {
		t.Errorf("Exec: %+v %v", res, err)
	}
	calls := f.ExecCalls()
	if len(calls) != 1 || calls[0].WorkDir != "/workspace/app" {
		t.Errorf("the adapter's default WorkDir did not reach the command: %+v", calls)
	}

	// ExecStream: stdin through a handler, and Cancel ending a long one.
	f.SetExecHandler(func(ctx context.Context, call *sandboxfake.ExecCall, s sandboxfake.ExecIO) (int, error) {
		if call.Command[0] == "cat" {
			_, err := io.Copy(s.Stdout, s.Stdin)
			return 0, err
		}
		<-ctx.Done()
		return -1, ctx.Err()
	})
	st, err := r.ExecStream(ctx, id, []string{"cat"}, yaoruntime.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.WriteString(st.Stdin, "through stdin"); st.Stdin.Close() }()
	go func() { _, _ = io.Copy(io.Discard, st.Stderr) }()
	out, _ := io.ReadAll(st.Stdout)
	if code, err := st.Wait(); code != 0 || err != nil || string(out) != "through stdin" {
		t.Errorf("ExecStream(cat): %d %v %q", code, err, out)
	}
	long, err := r.ExecStream(ctx, id, []string{"sleep", "300"}, yaoruntime.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, long.Stdout) }()
	go func() { _, _ = io.Copy(io.Discard, long.Stderr) }()
	long.Cancel()
	if _, err := long.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled stream: %v", err)
	}
	calls = f.ExecCalls()
	if last := calls[len(calls)-1]; !last.Ended || !last.Killed {
		t.Errorf("the cancelled command was not ended: %+v", last)
	}

	if err := r.Stop(ctx, id, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if info, _ := r.Inspect(ctx, id); info.Status != "exited" {
		t.Errorf("after Stop: %+v", info)
	}
	if list, _ := r.List(ctx, yaoruntime.ListOptions{}); len(list) != 0 {
		t.Errorf("List (running only) after Stop: %+v", list)
	}
	if err := r.Remove(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Inspect(ctx, id); !sandbox.IsNotFound(err) {
		t.Errorf("Inspect after Remove: %v", err)
	}
	if err := r.Remove(ctx, id, false); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Remove of a missing one without force: %v", err)
	}
}

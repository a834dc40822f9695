package yaoruntime_test

// The adapter against a live cluster (see clients/go/sandbox/integration_test.go for the
// environment; tests/integration/test_goclient.sh sets it).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
	"github.com/yaoapp/yao-sandbox/clients/go/yaoruntime"
)

func TestITRuntime(t *testing.T) {
	kc := os.Getenv("YAO_GO_IT_KUBECONFIG")
	if kc == "" {
		t.Skip("integration test: set YAO_GO_IT_KUBECONFIG (tests/integration/test_goclient.sh does)")
	}
	c, err := sandbox.NewFromKubeconfig(kc, os.Getenv("YAO_GO_IT_NAMESPACE"))
	if err != nil {
		t.Fatal(err)
	}
	c.StartTimeout = 60 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := yaoruntime.New(c, yaoruntime.Options{StopTimeout: 60 * time.Second})
	run := fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff)
	root := os.Getenv("YAO_GO_IT_ROOT")

	// The adapter's default working directory: the workspace, via an annotation (no
	// workingDir in the pod spec). kwok runs exec'd commands on the host: a real path.
	opts := yaoruntime.CreateOptions{UserID: "yao" + run, ChatID: "chat 1", WorkingDir: root,
		Env: map[string]string{"GREETING": "hi"}, Labels: map[string]string{"yao-test": run},
		Lifecycle: v1alpha1.LifecyclePersistent, Memory: 256 << 20, CPUs: 0.5}
	id, err := r.Create(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Remove(context.Background(), id) }()
	if again, err := r.Create(ctx, opts); err != nil || again != id {
		t.Errorf("second Create: %q, %v (first %q)", again, err, id)
	}
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	info, err := r.Inspect(ctx, id)
	if err != nil || info.ID != id || info.Status != "running" || info.IP == "" || info.Labels["yao-test"] != run {
		t.Errorf("Inspect: %+v, %v", info, err)
	}
	list, err := r.List(ctx, yaoruntime.ListOptions{Labels: map[string]string{"yao-test": run}})
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Errorf("List(running, label): %+v, %v", list, err)
	}

	res, err := r.Exec(ctx, id, []string{"sh", "-c", `printf '%s %s' "$PWD" "$X"; echo oops >&2; exit 4`},
		yaoruntime.ExecOptions{Env: map[string]string{"X": "y"}})
	if err != nil || res.ExitCode != 4 || res.Stdout != root+" y" || res.Stderr != "oops\n" {
		t.Errorf("Exec: %+v, %v", res, err)
	}
	res, err = r.Exec(ctx, id, []string{"pwd"}, yaoruntime.ExecOptions{WorkDir: "/tmp"})
	if err != nil || res.Stdout != "/tmp\n" {
		t.Errorf("Exec with WorkDir: %+v, %v", res, err)
	}

	// ExecStream: a line-by-line conversation over stdin/stdout, then EOF and the code.
	s, err := r.ExecStream(ctx, id, []string{"sh", "-c", `while read -r l; do echo "got $l"; echo "e $l" >&2; done; exit 7`}, yaoruntime.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan string, 1)
	go func() { b, _ := io.ReadAll(s.Stderr); errc <- string(b) }()
	out := bufio.NewReader(s.Stdout)
	for i := 0; i < 3; i++ {
		fmt.Fprintf(s.Stdin, "line %d\n", i)
		l, err := out.ReadString('\n')
		if err != nil || l != fmt.Sprintf("got line %d\n", i) {
			t.Fatalf("ExecStream reply %d: %q, %v", i, l, err)
		}
	}
	s.Stdin.Close()
	if rest, _ := io.ReadAll(out); len(rest) != 0 {
		t.Errorf("more stdout after EOF: %q", rest)
	}
	if code, err := s.Wait(); err != nil || code != 7 {
		t.Errorf("ExecStream Wait: %d, %v", code, err)
	}
	if e := <-errc; e != "e line 0\ne line 1\ne line 2\n" {
		t.Errorf("ExecStream stderr %q", e)
	}

	// Cancel ends a command that would run for a minute; Close cancels open streams.
	s, err = r.ExecStream(ctx, id, []string{"sleep", "60"}, yaoruntime.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Cancel()
	if _, err := s.Wait(); err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("Cancel: %v after %v", err, time.Since(start))
	}

	if err := r.Remove(ctx, id, false); err == nil {
		t.Error("Remove without force of a running sandbox succeeded")
	}
	if err := r.Stop(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if info, err := r.Inspect(ctx, id); err != nil || info.Status != "exited" {
		t.Errorf("Inspect after Stop: %+v, %v", info, err)
	}
	if list, err := r.List(ctx, yaoruntime.ListOptions{Labels: map[string]string{"yao-test": run}}); err != nil || len(list) != 0 {
		t.Errorf("List(running) after Stop: %+v, %v", list, err)
	}
	if list, err := r.List(ctx, yaoruntime.ListOptions{All: true, Labels: map[string]string{"yao-test": run}}); err != nil || len(list) != 1 {
		t.Errorf("List(all) after Stop: %+v, %v", list, err)
	}
	// Exec wakes a stopped sandbox, like the CLI.
	if res, err := r.Exec(ctx, id, []string{"echo", "again"}, yaoruntime.ExecOptions{}); err != nil || res.Stdout != "again\n" {
		t.Errorf("Exec after Stop: %+v, %v", res, err)
	}
	if err := r.Remove(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitGone(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, id, false); !sandbox.IsNotFound(err) {
		t.Errorf("Remove without force of a missing sandbox: %v", err)
	}
	if err := r.Remove(ctx, id, true); err != nil {
		t.Errorf("Remove with force of a missing sandbox: %v", err)
	}

	s2, err := r.ExecStream(ctx, id, []string{"true"}, yaoruntime.ExecOptions{})
	if err == nil {
		s2.Cancel()
		t.Error("ExecStream on a removed sandbox succeeded")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Inspect(ctx, id); !errors.Is(err, yaoruntime.ErrClosed) {
		t.Errorf("Inspect after Close: %v", err)
	}
}

package sandbox_test

// Ending a command ends its processes in the sandbox (ExecOptions.KeepRunning), against a
// live cluster: on the kwok plane (TestITExecCancel, tests/integration/test_goclient.sh;
// kwok runs exec'd commands as host processes) and in a real container
// (TestExecCancelOnTheRealNode, tests/integration/test_node_goclient.sh, which sets
// YAO_NODE_KUBECONFIG, YAO_NODE_NAMESPACE and YAO_NODE_SANDBOX, a running Sandbox).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

func TestITExecCancel(t *testing.T) {
	c := itClient(t)
	sb := ready(t, c, "cancel"+run, "c", itSpec(t, v1alpha1.LifecyclePersistent))
	testExecCancel(t, c, sb.Name)
}

func TestExecCancelOnTheRealNode(t *testing.T) {
	kc, name := os.Getenv("YAO_NODE_KUBECONFIG"), os.Getenv("YAO_NODE_SANDBOX")
	if kc == "" || name == "" {
		t.Skip("real-node test: tests/integration/test_node_goclient.sh sets YAO_NODE_*")
	}
	c, err := sandbox.NewFromKubeconfig(kc, os.Getenv("YAO_NODE_NAMESPACE"))
	if err != nil {
		t.Fatal(err)
	}
	testExecCancel(t, c, name)
}

// sleepers counts the processes whose command line is "sleep SECS" (seen by a second
// exec, in the sandbox's own /proc), and kills them when kill is set.
func sleepers(t *testing.T, c *sandbox.Client, name string, secs int, kill bool) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := `n=0
for d in /proc/[0-9]*; do
	[ "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)" = "sleep $1 " ] || continue
	n=$((n + 1)); [ "$2" = kill ] && kill -9 "${d#/proc/}"
done
echo $n`
	var out strings.Builder
	mode := "count"
	if kill {
		mode = "kill"
	}
	code, err := c.Exec(ctx, name, sandbox.ExecOptions{
		Command: []string{"sh", "-c", script, "sh", strconv.Itoa(secs), mode}, Stdout: &out, KeepRunning: true})
	if err != nil || code != 0 {
		t.Fatalf("counting sleepers: %d, %v", code, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("counting sleepers: %q", out.String())
	}
	return n
}

// waitSleepers waits until n processes "sleep SECS" run.
func waitSleepers(t *testing.T, c *sandbox.Client, name string, secs, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got := sleepers(t, c, name, secs, false)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes \"sleep %d\", want %d", got, secs, n)
		}
	}
}

type execResult struct {
	code int
	err  error
	took time.Duration
}

// startExec runs opts in the background; the result arrives on the channel.
func startExec(ctx context.Context, c *sandbox.Client, name string, opts sandbox.ExecOptions) <-chan execResult {
	ch := make(chan execResult, 1)
	go func() {
		t0 := time.Now()
		code, err := c.Exec(ctx, name, opts)
		ch <- execResult{code, err, time.Since(t0)}
	}()
	return ch
}

func testExecCancel(t *testing.T, c *sandbox.Client, name string) {
	base := 3000 + int(time.Now().UnixNano()%900) // "sleep 3xyz": only this run's
	// A shell with a child (the child has to go too, not only the process exec started).
	tree := func(secs int, trap string) []string {
		return []string{"sh", "-c", fmt.Sprintf("%s sleep %d; echo never", trap, secs)}
	}

	// 1. Cancelling the context: Exec returns context.Canceled, and by then no process of
	// the command is left.
	ctx, cancel := context.WithCancel(context.Background())
	res := startExec(ctx, c, name, sandbox.ExecOptions{Command: tree(base, "")})
	waitSleepers(t, c, name, base, 1)
	cancel()
	r := <-res
	if !errors.Is(r.err, context.Canceled) || r.code != -1 {
		t.Errorf("cancelled Exec: code %d, err %v; want -1 and context.Canceled", r.code, r.err)
	}
	if n := sleepers(t, c, name, base, false); n != 0 {
		t.Errorf("after cancel: %d processes \"sleep %d\" still run", n, base)
	}

	// 2. Timeout ends it the same way.
	res = startExec(context.Background(), c, name, sandbox.ExecOptions{Command: tree(base+1, ""), Timeout: 3 * time.Second})
	r = <-res
	if !errors.Is(r.err, context.DeadlineExceeded) {
		t.Errorf("Exec with Timeout: code %d, err %v; want context.DeadlineExceeded", r.code, r.err)
	}
	if n := sleepers(t, c, name, base+1, false); n != 0 {
		t.Errorf("after the timeout: %d processes \"sleep %d\" still run", n, base+1)
	}

	// 3. A command that ignores SIGTERM (and so its child: ignored signals are inherited)
	// gets SIGKILL after CancelGrace.
	ctx, cancel = context.WithCancel(context.Background())
	res = startExec(ctx, c, name, sandbox.ExecOptions{Command: tree(base+2, "trap '' TERM;"), CancelGrace: 1500 * time.Millisecond})
	waitSleepers(t, c, name, base+2, 1)
	t0 := time.Now()
	cancel()
	r = <-res
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled Exec (TERM ignored): %v", r.err)
	}
	if n := sleepers(t, c, name, base+2, false); n != 0 {
		t.Errorf("TERM ignored: %d processes \"sleep %d\" still run after the grace", n, base+2)
	}
	if d := time.Since(t0); d < 1500*time.Millisecond {
		t.Errorf("TERM ignored: killed after %v, before the grace of 1.5 s", d)
	}

	// 4. KeepRunning: the old behaviour, which the above is about — the command outlives
	// its stream (cleaned up here by hand).
	ctx, cancel = context.WithCancel(context.Background())
	res = startExec(ctx, c, name, sandbox.ExecOptions{Command: tree(base+3, ""), KeepRunning: true})
	waitSleepers(t, c, name, base+3, 1)
	cancel()
	if r = <-res; !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled Exec with KeepRunning: %v", r.err)
	}
	time.Sleep(time.Second)
	if n := sleepers(t, c, name, base+3, true); n != 1 {
		t.Errorf("KeepRunning: %d processes \"sleep %d\" after cancel, want 1 (kept)", n, base+3)
	}

	// 5. A command that ends by itself is not affected (its marker matches nothing), and
	// stdout still arrives.
	var out strings.Builder
	code, err := c.Exec(context.Background(), name, sandbox.ExecOptions{
		Command: []string{"sh", "-c", `echo "$0"`, "marked"}, Stdout: &out})
	if err != nil || code != 0 || out.String() != "marked\n" {
		t.Errorf("plain exec: %d, %v, %q", code, err, out.String())
	}
}

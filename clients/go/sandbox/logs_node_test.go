package sandbox_test

// Logs on the real node, run by tests/integration/test_node_goclient.sh: it sets
// YAO_NODE_KUBECONFIG (the yao-sandbox-editor role only), YAO_NODE_NAMESPACE and
// YAO_NODE_LOG_SANDBOX, a running Sandbox whose main process prints "line 1".."line 3",
// then "tick N" every second. Skipped without them.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

func TestLogsOnTheRealNode(t *testing.T) {
	kc, name := os.Getenv("YAO_NODE_KUBECONFIG"), os.Getenv("YAO_NODE_LOG_SANDBOX")
	if kc == "" || name == "" {
		t.Skip("real-node test: tests/integration/test_node_goclient.sh sets YAO_NODE_*")
	}
	c, err := sandbox.NewFromKubeconfig(kc, os.Getenv("YAO_NODE_NAMESPACE"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	read := func(opts sandbox.LogOptions) string {
		t.Helper()
		rc, err := c.Logs(ctx, name, opts)
		if err != nil {
			t.Fatalf("Logs(%+v): %v", opts, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatalf("reading the logs: %v", err)
		}
		return string(b)
	}
	all := read(sandbox.LogOptions{})
	if !strings.HasPrefix(all, "line 1\nline 2\nline 3\ntick 1\n") {
		t.Errorf("all the logs: %q", all)
	}
	if got := read(sandbox.LogOptions{TailLines: 1}); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "tick ") {
		t.Errorf("tail 1: %q", got)
	}
	if got := read(sandbox.LogOptions{LimitBytes: 10}); got != "line 1\nlin" {
		t.Errorf("limit 10 bytes: %q", got)
	}
	ts := read(sandbox.LogOptions{TailLines: 1, Timestamps: true})
	stamp, _, _ := strings.Cut(ts, " ")
	if at, err := time.Parse(time.RFC3339Nano, stamp); err != nil || time.Since(at) > time.Minute {
		t.Errorf("timestamps: %q (%v)", ts, err)
	}

	// Follow: new lines arrive as they are printed; ending ctx ends the stream.
	fctx, stop := context.WithCancel(ctx)
	rc, err := c.Logs(fctx, name, sandbox.LogOptions{Follow: true, TailLines: 1})
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	ended := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			lines <- sc.Text()
		}
		ended <- sc.Err()
	}()
	var got []string
	deadline := time.After(30 * time.Second)
	for len(got) < 3 {
		select {
		case l := <-lines:
			got = append(got, l)
		case <-deadline:
			t.Fatalf("follow: %q after 30 s, want 3 lines", got)
		}
	}
	for _, l := range got {
		if !strings.HasPrefix(l, "tick ") {
			t.Errorf("follow: %q", got)
		}
	}
	stop()
	go func() {
		for range lines {
		}
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Error("the followed stream did not end with its context")
	}
	rc.Close()

	// A stopped sandbox has no pod: a NotReadyError, not a hang.
	if _, err := c.Stop(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitStopped(ctx, name); err != nil {
		t.Fatal(err)
	}
	var nr *sandbox.NotReadyError
	if _, err := c.Logs(ctx, name, sandbox.LogOptions{}); !errors.As(err, &nr) {
		t.Errorf("logs of a stopped sandbox: %v", err)
	}
}

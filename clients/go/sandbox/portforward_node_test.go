package sandbox_test

// The real-node part of PortForward, run by tests/integration/test_node_ports.sh: it sets
// YAO_PF_KUBECONFIG (the yao-sandbox-editor role only), YAO_PF_NAMESPACE, YAO_PF_SANDBOX
// (a running Sandbox whose container serves HTTP on YAO_PF_PORT) and YAO_PF_BIG (a local
// file the server serves as /big). Skipped without them.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

func TestPortForwardOnTheRealNode(t *testing.T) {
	kc, ns, name := os.Getenv("YAO_PF_KUBECONFIG"), os.Getenv("YAO_PF_NAMESPACE"), os.Getenv("YAO_PF_SANDBOX")
	if kc == "" || name == "" {
		t.Skip("real-node test: tests/integration/test_node_ports.sh sets YAO_PF_*")
	}
	remote, _ := strconv.Atoi(os.Getenv("YAO_PF_PORT"))
	big, err := os.ReadFile(os.Getenv("YAO_PF_BIG"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := sandbox.NewFromKubeconfig(kc, ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fctx, stop := context.WithCancel(ctx)
	local, err := c.PortForward(fctx, name, 0, remote)
	if err != nil {
		t.Fatalf("PortForward: %v", err)
	}
	if local <= 0 {
		t.Fatalf("no local port: %d", local)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", local)
	get := func(path string) ([]byte, error) {
		resp, err := (&http.Client{Timeout: time.Minute}).Get(base + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b, err := get("/big")
			if err == nil && !bytes.Equal(b, big) {
				err = fmt.Errorf("%d bytes, not the %d of the file (or different)", len(b), len(big))
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("connection %d: %v", i, err)
		}
	}
	if b, err := get("/index.html"); err != nil || string(b) != "hello from the sandbox\n" {
		t.Errorf("index: %q, %v", b, err)
	}

	// A second forward to a port nobody listens on: the connection ends without data (and
	// client-go ends that forward with it; the first one is not affected).
	dead, err := c.PortForward(fctx, name, 0, 9)
	if err != nil {
		t.Fatalf("PortForward to port 9: %v", err)
	}
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", dead), 10*time.Second)
	if err == nil {
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		n, rerr := conn.Read(make([]byte, 16))
		if n != 0 || rerr == nil {
			t.Errorf("port 9: read %d bytes, err %v; want the connection closed", n, rerr)
		}
		conn.Close()
	}

	if b, err := get("/index.html"); err != nil || string(b) != "hello from the sandbox\n" {
		t.Errorf("the first forward after the second one failed: %q, %v", b, err)
	}

	// Ending the context ends the forward: the local port stops answering.
	stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Error("the local port still accepts after the context ended")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

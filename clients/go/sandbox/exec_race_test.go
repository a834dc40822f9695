package sandbox

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"k8s.io/client-go/rest"
)

// quickExecServer answers every pods/exec request as a kubelet does for a command that ends
// at once: over the v5 channel protocol it sends the command's stdout, its stderr and its
// status right after the upgrade, before the client may have set up its streams.
func quickExecServer(t *testing.T) *httptest.Server {
	up := websocket.Upgrader{Subprotocols: []string{"v5.channel.k8s.io"}}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/exec") {
			http.NotFound(w, r)
			return
		}
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for _, m := range [][]byte{
			append([]byte{1}, "out\n"...),
			append([]byte{2}, "err\n"...),
			append([]byte{3}, `{"metadata":{},"status":"Success"}`...),
		} {
			if conn.WriteMessage(websocket.BinaryMessage, m) != nil {
				return
			}
		}
		_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
		_, _, _ = conn.ReadMessage() // until the client closes too
	}))
}

// TestExecOutputSentAtOnce: a command whose output and status arrive at once loses none of
// it (client-go before v0.34 read the connection before it had made the streams, and
// dropped what came first: "Unknown stream id", an exec with no output and no status).
func TestExecOutputSentAtOnce(t *testing.T) {
	srv := quickExecServer(t)
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL}, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i++ {
		var out, errb bytes.Buffer
		code, err := c.execInPod(context.Background(), "p", []string{"true"}, ExecOptions{Stdout: &out, Stderr: &errb})
		if err != nil || code != 0 || out.String() != "out\n" || errb.String() != "err\n" {
			t.Fatalf("exec %d: code %d, err %v, stdout %q, stderr %q", i, code, err, out.String(), errb.String())
		}
	}
}

package yaoruntime_test

// Yao in the cluster (tests/integration/test_node_yao.sh sets the environment): the
// runtime, as Yao's ServiceAccount holding only yao-sandbox-editor, creates a chat's
// Sandbox with the environment Yao gives its sandboxes (YAO_IPC_MODE=grpc,
// YAO_GRPC_ADDR=host.tai.internal:9099, the tokens, no YAO_GRPC_TLS), then runs yao-bridge
// in it as Yao's coder assistant does (its MCP server on stdio) and speaks MCP to it:
// initialize, tools/list and tools/call reach the Yao server through the class's
// host.tai.internal, and the bridge stays up past one heartbeat interval so the server
// sees a Heartbeat. The suite checks the server's side (its log) and the network.

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
	"github.com/yaoapp/yao-sandbox/clients/go/yaoruntime"
)

func TestITYaoInCluster(t *testing.T) {
	kc := os.Getenv("YAO_GO_IT_YAO_KUBECONFIG")
	if kc == "" {
		t.Skip("integration test: set YAO_GO_IT_YAO_KUBECONFIG (tests/integration/test_node_yao.sh does)")
	}
	user, chat := os.Getenv("YAO_GO_IT_YAO_USER"), os.Getenv("YAO_GO_IT_YAO_CHAT")
	c, err := sandbox.NewFromKubeconfig(kc, os.Getenv("YAO_GO_IT_YAO_NAMESPACE"))
	if err != nil {
		t.Fatal(err)
	}
	c.StartTimeout = 120 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := yaoruntime.New(c, yaoruntime.Options{})
	defer r.Close()

	// What Yao's sandbox manager puts in a sandbox's environment (no YAO_GRPC_TLS: the
	// connection stays inside the cluster, plaintext, as in Tai's tunnel mode).
	env := map[string]string{
		"YAO_IPC_MODE":      "grpc",
		"YAO_GRPC_ADDR":     "host.tai.internal:9099",
		"YAO_TOKEN":         os.Getenv("YAO_GO_IT_YAO_TOKEN"),
		"YAO_REFRESH_TOKEN": os.Getenv("YAO_GO_IT_YAO_REFRESH"),
		"YAO_SANDBOX_ID":    os.Getenv("YAO_GO_IT_YAO_SESSION"),
		"YAO_USER_ID":       user,
		"YAO_TEAM_ID":       "team-1",
		"CTX_CHAT_ID":       chat,
		"CTX_WORKSPACE_ID":  chat,
	}
	id, err := r.Create(ctx, yaoruntime.CreateOptions{UserID: user, ChatID: chat, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	res, err := r.Exec(ctx, id, []string{"sh", "-c", "grep -w host.tai.internal /etc/hosts; echo grpc=$YAO_GRPC_ADDR tls=${YAO_GRPC_TLS-unset}"}, yaoruntime.ExecOptions{})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v, %v", res, err)
	}
	t.Logf("in the sandbox: %s", strings.TrimSpace(res.Stdout))
	if !strings.Contains(res.Stdout, "host.tai.internal") || !strings.Contains(res.Stdout, "grpc=host.tai.internal:9099 tls=unset") {
		t.Errorf("the sandbox's hosts file or environment: %q", res.Stdout)
	}
	if want := os.Getenv("YAO_GO_IT_YAO_SERVER_IP"); want != "" && !strings.HasPrefix(strings.TrimSpace(res.Stdout), want) {
		t.Errorf("host.tai.internal is not the Yao Service's address %s: %q", want, res.Stdout)
	}

	// yao-bridge as the MCP server of an agent in the sandbox.
	s, err := r.ExecStream(ctx, id, []string{"yao-bridge"}, yaoruntime.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	go func() { _, _ = io.Copy(&stderr, s.Stderr) }()
	out := bufio.NewScanner(s.Stdout)
	out.Buffer(make([]byte, 1<<20), 1<<20)
	call := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(s.Stdin, line+"\n"); err != nil {
			t.Fatalf("write %s: %v", line, err)
		}
		if !out.Scan() {
			t.Fatalf("no answer to %s (stderr: %s): %v", line, stderr.String(), out.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("answer %q: %v", out.Text(), err)
		}
		return m
	}
	hello := call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"test"}}}`)
	if hello["result"] == nil {
		t.Errorf("initialize: %v", hello)
	}
	if _, err := io.WriteString(s.Stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	list := call(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	names := []string{}
	if res, ok := list["result"].(map[string]any); ok {
		if tools, ok := res["tools"].([]any); ok {
			for _, tl := range tools {
				if m, ok := tl.(map[string]any); ok {
					names = append(names, m["name"].(string))
				}
			}
		}
	}
	t.Logf("Yao's tools: %v", names)
	if strings.Join(names, ",") != os.Getenv("YAO_GO_IT_YAO_TOOLS") {
		t.Errorf("tools/list: %v, want %s (answer %v)", names, os.Getenv("YAO_GO_IT_YAO_TOOLS"), list)
	}
	echo := call(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"from the sandbox \u2713"}}}`)
	if b, _ := json.Marshal(echo["result"]); !strings.Contains(string(b), "from the sandbox") {
		t.Errorf("tools/call echo: %v", echo)
	}
	// One heartbeat interval (10 s, Yao's default) and a little: the server records it.
	time.Sleep(12 * time.Second)
	_ = s.Stdin.Close()
	code, err := s.Wait()
	if err != nil || code != 0 {
		t.Errorf("yao-bridge: exit %d, %v; stderr: %s", code, err, stderr.String())
	}
	if strings.Contains(stderr.String(), "heartbeat to") && strings.Contains(stderr.String(), "failed") {
		t.Errorf("a heartbeat failed: %s", stderr.String())
	}
}

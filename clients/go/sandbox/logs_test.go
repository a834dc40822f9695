package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

// TestLogs: the request kubectl logs makes (the sandbox container of status.podName, the
// options as query parameters), the body streamed back; no pod is a NotReadyError.
func TestLogs(t *testing.T) {
	var mu sync.Mutex
	var query url.Values
	var logPath string
	sb := sbWith(func(s *v1alpha1.Sandbox) { s.Name = "s"; s.Status.PodName = "pod-1" })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/namespaces/ns/sandboxes/"+sb.Name):
			w.Header().Set("Content-Type", "application/json")
			sb.APIVersion, sb.Kind = "sandbox.yaoapps.com/v1alpha1", "Sandbox"
			_ = json.NewEncoder(w).Encode(sb)
		case strings.HasSuffix(r.URL.Path, "/log") && !strings.Contains(r.URL.Path, "/pods/pod-1/"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"pods \"x\" not found","details":{"name":"x","kind":"pods"}}`)
		case strings.HasSuffix(r.URL.Path, "/log"):
			logPath, query = r.URL.Path, r.URL.Query()
			_, _ = io.WriteString(w, "line 1\nline 2\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL}, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	since := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rc, err := c.Logs(ctx, "s", LogOptions{Follow: true, TailLines: 20, Timestamps: true, LimitBytes: 4096, SinceTime: since})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "line 1\nline 2\n" {
		t.Errorf("body %q", body)
	}
	mu.Lock()
	if logPath != "/api/v1/namespaces/ns/pods/pod-1/log" {
		t.Errorf("path %q", logPath)
	}
	want := url.Values{"container": {"sandbox"}, "follow": {"true"}, "tailLines": {"20"}, "timestamps": {"true"},
		"limitBytes": {"4096"}, "sinceTime": {"2030-01-02T03:04:05Z"}}
	for k, v := range want {
		if query.Get(k) != v[0] {
			t.Errorf("query %s=%q, want %q (all: %v)", k, query.Get(k), v[0], query)
		}
	}
	mu.Unlock()

	// Defaults: everything, no follow; Since in whole seconds (rounded up).
	rc, err = c.Logs(ctx, "s", LogOptions{Since: 1500 * time.Millisecond, Previous: true})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	mu.Lock()
	if query.Get("tailLines") != "" || query.Get("follow") != "" || query.Get("sinceSeconds") != "2" || query.Get("previous") != "true" {
		t.Errorf("default query %v", query)
	}
	mu.Unlock()

	if _, err := c.Logs(ctx, "s", LogOptions{Since: time.Second, SinceTime: since}); err == nil {
		t.Error("Since and SinceTime together were accepted")
	}
	if _, err := c.Logs(ctx, "s", LogOptions{TailLines: -1}); err == nil {
		t.Error("a negative TailLines was accepted")
	}
	// Stopped: the status keeps the pod's name, but there is no pod.
	mu.Lock()
	sb.Status.Phase = v1alpha1.PhaseStopped
	mu.Unlock()
	var nr *NotReadyError
	if _, err := c.Logs(ctx, "s", LogOptions{}); !errors.As(err, &nr) {
		t.Errorf("stopped: %v, want a NotReadyError", err)
	}
	mu.Lock()
	sb.Status.Phase, sb.Status.PodName = v1alpha1.PhaseRunning, "gone-pod"
	mu.Unlock()
	if _, err := c.Logs(ctx, "s", LogOptions{}); !errors.As(err, &nr) || !IsNotFound(nr.Err) {
		t.Errorf("a pod that is gone: %v, want a NotReadyError", err)
	}
	mu.Lock()
	sb.Status.PodName = ""
	mu.Unlock()
	if _, err := c.Logs(ctx, "s", LogOptions{}); !errors.As(err, &nr) {
		t.Errorf("no pod: %v, want a NotReadyError", err)
	}
	if _, err := c.Logs(ctx, "missing", LogOptions{}); !IsNotFound(err) {
		t.Errorf("missing sandbox: %v", err)
	}
}

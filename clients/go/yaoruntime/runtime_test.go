package yaoruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

// createAPI answers GET with 404 and POST with what it was sent, keeping the last body.
type createAPI struct {
	mu   sync.Mutex
	last *v1alpha1.Sandbox
}

func (f *createAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		return
	}
	sb := &v1alpha1.Sandbox{}
	if err := json.NewDecoder(r.Body).Decode(sb); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.last = sb
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(sb)
}

func newFake(t *testing.T, o Options) (*Runtime, *createAPI) {
	f := &createAPI{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := sandbox.New(&rest.Config{Host: srv.URL}, sandbox.Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return New(c, o), f
}

func TestCreateMapsOptions(t *testing.T) {
	r, f := newFake(t, Options{})
	id, err := r.Create(context.Background(), CreateOptions{
		Name: "box", Image: "img:1", Cmd: []string{"sleep", "inf"}, Env: map[string]string{"B": "2", "A": "1"},
		WorkingDir: "/w", Memory: 512 << 20, CPUs: 1.5, Labels: map[string]string{"app": "yao"},
		UserID: "alice", ChatID: "c1", Lifecycle: v1alpha1.LifecycleLongRunning, IdleTimeout: "1h",
	})
	if err != nil || id != "yao-sb-alice-c1" {
		t.Fatalf("Create: %q, %v", id, err)
	}
	sb := f.last
	got, _ := json.Marshal(sb.Spec)
	want := `{"userID":"alice","chatID":"c1","image":"img:1","lifecycle":"long-running","idleTimeout":"1h",` +
		`"args":["sleep","inf"],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],` +
		`"resources":{"memory":"536870912","cpu":"1500m"}}`
	if string(got) != want {
		t.Errorf("spec\n got %s\nwant %s", got, want)
	}
	if sb.Name != "yao-sb-alice-c1" || sb.Labels["app"] != "yao" || sb.Annotations[AnnotationWorkDir] != "/w" {
		t.Errorf("metadata %+v", sb.ObjectMeta)
	}
}

func TestCreateIdentityAndRefusals(t *testing.T) {
	r, f := newFake(t, Options{})
	ctx := context.Background()
	want, _ := sandbox.PodName("bob", "chat-9")
	if id, err := r.Create(ctx, CreateOptions{Name: "chat-9", Labels: map[string]string{LabelUserID: "bob"}}); err != nil ||
		id != want || f.last.Spec.UserID != "bob" || f.last.Spec.ChatID != "chat-9" {
		t.Errorf("identity from the label and Name: %q, %v, %+v", id, err, f.last.Spec)
	}
	if _, err := r.Create(ctx, CreateOptions{ChatID: "x"}); err != nil || f.last.Spec.UserID != "yao" {
		t.Errorf("default user: %v, %+v", err, f.last.Spec)
	}
	if _, err := r.Create(ctx, CreateOptions{}); err == nil {
		t.Error("no chat at all was accepted")
	}
	if _, err := r.Create(ctx, CreateOptions{ChatID: "p", Ports: []PortMapping{{ContainerPort: 5900, HostPort: 15900},
		{ContainerPort: 53, Protocol: "udp"}, {ContainerPort: 5900, Protocol: "tcp"}}}); err != nil {
		t.Errorf("ports: %v", err)
	} else if got := fmt.Sprintf("%+v", f.last.Spec.Ports); got != "[{Name:tcp-5900 Port:5900 Protocol:TCP} {Name:udp-53 Port:53 Protocol:UDP}]" {
		t.Errorf("ports became %s", got)
	}
	if _, err := r.Create(ctx, CreateOptions{ChatID: "x", Ports: []PortMapping{{ContainerPort: 9, Protocol: "sctp"}}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("sctp: %v", err)
	}
	if _, err := r.Create(ctx, CreateOptions{ChatID: "x", Ports: []PortMapping{{ContainerPort: 0}}}); err == nil {
		t.Error("port 0 was accepted")
	}
	if _, err := r.Create(ctx, CreateOptions{ChatID: "x", User: "root"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("user: %v", err)
	}
	lax, _ := newFake(t, Options{IgnoreUnsupported: true})
	if _, err := lax.Create(ctx, CreateOptions{ChatID: "x", User: "root", Ports: []PortMapping{{ContainerPort: 1, Protocol: "sctp"}}}); err != nil {
		t.Errorf("IgnoreUnsupported: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, CreateOptions{ChatID: "x"}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// Yao's sandbox environment carries YAO_USER_ID, which the controller sets itself: the
// Sandbox's own value is dropped from spec.env, another is refused, as is YAO_SANDBOX_NAME.
func TestCreateLeavesTheControllersVariablesToIt(t *testing.T) {
	r, f := newFake(t, Options{})
	ctx := context.Background()
	env := map[string]string{"YAO_USER_ID": "alice", "YAO_CHAT_ID": "c1", "YAO_TOKEN": "t", "CTX_CHAT_ID": "c1"}
	if _, err := r.Create(ctx, CreateOptions{UserID: "alice", ChatID: "c1", Env: env}); err != nil {
		t.Fatalf("Yao's environment: %v", err)
	}
	got, _ := json.Marshal(f.last.Spec.Env)
	if string(got) != `[{"name":"CTX_CHAT_ID","value":"c1"},{"name":"YAO_TOKEN","value":"t"}]` {
		t.Errorf("env %s", got)
	}
	for _, bad := range []map[string]string{{"YAO_USER_ID": "mallory"}, {"YAO_CHAT_ID": "other"}, {"YAO_SANDBOX_NAME": "x"}} {
		if _, err := r.Create(ctx, CreateOptions{UserID: "alice", ChatID: "c1", Env: bad}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

func TestStatusOf(t *testing.T) {
	now := metav1.Now()
	mk := func(phase v1alpha1.Phase, paused bool, del *metav1.Time) *v1alpha1.Sandbox {
		sb := &v1alpha1.Sandbox{}
		sb.Status.Phase, sb.Spec.Paused, sb.DeletionTimestamp = phase, paused, del
		sb.Status.PodName = "p"
		return sb
	}
	for _, c := range []struct {
		sb   *v1alpha1.Sandbox
		want string
	}{
		{mk(v1alpha1.PhaseRunning, false, nil), "running"},
		{mk(v1alpha1.PhaseRunning, true, nil), "exited"},
		{mk(v1alpha1.PhaseStopped, false, nil), "exited"},
		{mk(v1alpha1.PhaseSucceeded, false, nil), "exited"},
		{mk(v1alpha1.PhasePending, false, nil), "created"},
		{mk(v1alpha1.PhaseCreating, false, nil), "created"},
		{mk(v1alpha1.PhaseRunning, false, &now), "removing"},
	} {
		if got := StatusOf(c.sb); got != c.want {
			t.Errorf("%s paused=%v deleting=%v: %q, want %q", c.sb.Status.Phase, c.sb.Spec.Paused,
				c.sb.DeletionTimestamp != nil, got, c.want)
		}
	}
}

func TestInspectReportsSpecPorts(t *testing.T) {
	sb := &v1alpha1.Sandbox{Spec: v1alpha1.SandboxSpec{Ports: []v1alpha1.Port{
		{Name: "vnc", Port: 5900}, {Name: "dns", Port: 53, Protocol: "UDP"}}}}
	sb.Name = "s"
	got := fmt.Sprintf("%+v", infoOf(sb).Ports)
	if got != "[{ContainerPort:5900 HostPort:0 Protocol:tcp} {ContainerPort:53 HostPort:0 Protocol:udp}]" {
		t.Errorf("Inspect's ports: %s", got)
	}
}

package sandbox_test

// Kubeconfig auth through an exec credential plugin (client-go's, which the Client uses
// as it is), against the plane: tests/integration/test_goclient.sh sets YAO_GO_IT_PLUGIN
// (a plugin script: it answers by the files of the directory $PLUGIN_DIR names — "token"
// and "mode": token, bad-first (a bogus token on its first run), cert (the client
// certificate in "cert" and "key"), fail — with an expirationTimestamp "lifetime"
// seconds ahead when that file is not empty — and logs each run to "plugin.log"). The
// rest of the module's integration tests run through such a kubeconfig too.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

// pluginSetup is one plugin directory and a kubeconfig whose user runs the plugin.
type pluginSetup struct {
	dir, kubeconfig, server string
}

func newPlugin(t *testing.T, apiVersion, mode, lifetime string) *pluginSetup {
	t.Helper()
	plugin := os.Getenv("YAO_GO_IT_PLUGIN")
	if plugin == "" || os.Getenv("YAO_GO_IT_KUBECONFIG") == "" {
		t.Skip("integration test: tests/integration/test_goclient.sh sets YAO_GO_IT_PLUGIN")
	}
	// The cluster and the ServiceAccount token of the suite's kubeconfig.
	base, err := clientcmd.LoadFromFile(os.Getenv("YAO_GO_IT_SA_KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	kctx := base.Contexts[base.CurrentContext]
	cluster, user := base.Clusters[kctx.Cluster], base.AuthInfos[kctx.AuthInfo]
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("token", user.Token)
	write("mode", mode)
	write("lifetime", lifetime)
	if pki := os.Getenv("YAO_GO_IT_PKI"); pki != "" {
		for _, f := range [][2]string{{"cert", "admin-client.crt"}, {"key", "admin-client.key"}} {
			b, err := os.ReadFile(filepath.Join(pki, f[1]))
			if err != nil {
				t.Fatal(err)
			}
			write(f[0], string(b))
		}
	}
	cl := cluster.DeepCopy()
	cl.Extensions = nil
	kc := clientcmdapi.NewConfig()
	kc.Clusters["plane"] = cl
	kc.AuthInfos["plugged"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: apiVersion, Command: plugin, Args: []string{"--cluster", "plane"},
		Env:                []clientcmdapi.ExecEnvVar{{Name: "PLUGIN_DIR", Value: dir}},
		InteractiveMode:    clientcmdapi.NeverExecInteractiveMode,
		ProvideClusterInfo: true,
	}}
	kc.Contexts["plane"] = &clientcmdapi.Context{Cluster: "plane", AuthInfo: "plugged", Namespace: os.Getenv("YAO_GO_IT_NAMESPACE")}
	kc.CurrentContext = "plane"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return &pluginSetup{dir: dir, kubeconfig: path, server: cl.Server}
}

// runs are the plugin's runs so far: the JSON of KUBERNETES_EXEC_INFO and its args.
func (p *pluginSetup) runs(t *testing.T) []pluginRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, "plugin.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []pluginRun
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		args, info, ok := strings.Cut(line, " info=")
		if !ok {
			t.Fatalf("plugin.log: %q in %q", line, b)
		}
		r := pluginRun{Args: strings.TrimPrefix(args, "args=")}
		if err := json.Unmarshal([]byte(info), &r.Info); err != nil {
			t.Fatalf("KUBERNETES_EXEC_INFO %q: %v", info, err)
		}
		out = append(out, r)
	}
	return out
}

type pluginRun struct {
	Args string
	Info struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Interactive bool `json:"interactive"`
			Cluster     struct {
				Server string `json:"server"`
				CAData []byte `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"spec"`
	}
}

func TestITExecPlugin(t *testing.T) {
	ns := os.Getenv("YAO_GO_IT_NAMESPACE")
	ctx := ctxFor(t, 3*time.Minute)

	// v1, a credential valid for 3 s: a sandbox made, a command run across the expiry, and
	// a later use fetches it again (in this process: the client caches it until then).
	p := newPlugin(t, "client.authentication.k8s.io/v1", "token", "3")
	c, err := sandbox.NewFromKubeconfig(p.kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace() != ns {
		t.Errorf("namespace from the kubeconfig context: %q, want %q", c.Namespace(), ns)
	}
	c.StartTimeout = time.Minute
	sb := ready(t, c, "plugin"+run, "c", itSpec(t, v1alpha1.LifecyclePersistent))
	var out strings.Builder
	code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"sh", "-c", "sleep 4; echo through-the-plugin"}, Stdout: &out})
	if err != nil || code != 0 || out.String() != "through-the-plugin\n" {
		t.Errorf("exec through the plugin: %d, %v, %q", code, err, out.String())
	}
	if _, err := c.List(ctx, sandbox.ListOptions{UserID: "plugin" + run}); err != nil {
		t.Errorf("list after the expiry: %v", err)
	}
	runs := p.runs(t)
	if len(runs) < 2 {
		t.Errorf("the plugin ran %d times; want a second run after its credential expired", len(runs))
	}
	if len(runs) > 0 {
		r := runs[0]
		if r.Args != "--cluster plane" || r.Info.APIVersion != "client.authentication.k8s.io/v1" || r.Info.Kind != "ExecCredential" ||
			r.Info.Spec.Interactive || r.Info.Spec.Cluster.Server != p.server || len(r.Info.Spec.Cluster.CAData) == 0 {
			t.Errorf("the plugin got args %q and KUBERNETES_EXEC_INFO %+v", r.Args, r.Info)
		}
	}
	// The plugin's identity is the ServiceAccount's: no rights in another namespace.
	other, err := sandbox.NewFromKubeconfig(p.kubeconfig, "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.List(ctx, sandbox.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list in default with the plugin's token: %v, want Forbidden", err)
	}

	// A token refused with 401: that call fails, the plugin runs again, the next succeeds
	// (client-go's rule: it does not retry the request itself).
	p = newPlugin(t, "client.authentication.k8s.io/v1", "bad-first", "")
	c, err = sandbox.NewFromKubeconfig(p.kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, sb.Name); !apierrors.IsUnauthorized(err) {
		t.Errorf("first call with the bogus token: %v, want Unauthorized", err)
	}
	out.Reset()
	if code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"echo", "after-401"}, Stdout: &out}); err != nil || code != 0 || out.String() != "after-401\n" {
		t.Errorf("exec after the 401: %d, %v, %q", code, err, out.String())
	}
	if n := len(p.runs(t)); n != 2 {
		t.Errorf("the plugin ran %d times, want 2", n)
	}

	// v1beta1, and a client certificate from the plugin (the plane's system:masters one).
	p = newPlugin(t, "client.authentication.k8s.io/v1beta1", "cert", "")
	c, err = sandbox.NewFromKubeconfig(p.kubeconfig, "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(ctx, sandbox.ListOptions{}); err != nil {
		t.Errorf("list in default with the plugin's client certificate: %v", err)
	}
	c, err = sandbox.NewFromKubeconfig(p.kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{Command: []string{"echo", "cert-exec"}, Stdout: &out}); err != nil || code != 0 || out.String() != "cert-exec\n" {
		t.Errorf("exec with the plugin's client certificate: %d, %v, %q", code, err, out.String())
	}
	if runs := p.runs(t); len(runs) == 0 || runs[0].Info.APIVersion != "client.authentication.k8s.io/v1beta1" {
		t.Errorf("v1beta1 runs: %+v", runs)
	}

	// A failing plugin: the error says so.
	p = newPlugin(t, "client.authentication.k8s.io/v1", "fail", "")
	c, err = sandbox.NewFromKubeconfig(p.kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, sb.Name); err == nil || !strings.Contains(err.Error(), "exit code 1") {
		t.Errorf("a failing plugin: %v", err)
	}
}

package yaovolume

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

// StoppedPolicy says what file access does to a stopped or paused Sandbox.
type StoppedPolicy int

const (
	// PolicyHelper (the default) leaves the Sandbox stopped and runs the operation in a
	// short-lived helper pod that mounts its workspace claim (see helper.go).
	PolicyHelper StoppedPolicy = iota
	// PolicyWake starts the Sandbox (as an Exec would) and runs the operation in it.
	PolicyWake
	// PolicyRefuse fails with ErrSandboxStopped.
	PolicyRefuse
)

// Options tunes New.
type Options struct {
	// Namespace of the Sandboxes; "default" when empty.
	Namespace string
	// Stopped is the policy for stopped and paused Sandboxes (default PolicyHelper).
	Stopped StoppedPolicy
	// HelperImage runs the helper pod: any image with sh, sleep and GNU coreutils,
	// findutils and tar (the project's sandbox image). Default: the Sandbox's spec.image;
	// one of the two must be set.
	HelperImage string
	// HelperDeadline bounds a helper pod's life (its activeDeadlineSeconds; default 10
	// minutes): even a client that dies leaves no helper behind for longer.
	HelperDeadline time.Duration
	// HelperIdle is how long a helper this client made stays after its last operation
	// (default 30 s), so that a burst of file-browser calls starts one pod.
	HelperIdle time.Duration
	// HelperStartTimeout bounds the wait for a helper to run (default 2 minutes).
	HelperStartTimeout time.Duration
	// RunAsUser is the helper's uid, gid and fsGroup (default 1000, the sandbox's).
	RunAsUser int64
}

// Client is the Volume of the Sandboxes of one namespace. It is safe for concurrent use.
type Client struct {
	sb     *sandbox.Client
	core   rest.Interface // v1: pods and pods/exec of helpers
	params runtime.ParameterCodec
	cfg    *rest.Config
	ns     string
	opts   Options

	mu      sync.Mutex
	names   map[string]string            // session id -> Sandbox name
	known   map[string]*v1alpha1.Sandbox // session id -> the Sandbox last seen running
	helpers map[string]*helper           // Sandbox name -> its helper
	locks   map[string]*sync.Mutex
	closed  bool
}

var _ Volume = (*Client)(nil)

// New returns the Volume of the Sandboxes of opts.Namespace, with config's credentials.
// Running sandboxes need the yao-sandbox-editor role (pods/exec); the helper of a stopped
// one also needs pods create and delete in the namespace (docs/go-client.md).
func New(config *rest.Config, opts Options) (*Client, error) {
	if opts.HelperDeadline <= 0 {
		opts.HelperDeadline = 10 * time.Minute
	}
	if opts.HelperIdle <= 0 {
		opts.HelperIdle = 30 * time.Second
	}
	if opts.HelperStartTimeout <= 0 {
		opts.HelperStartTimeout = 2 * time.Minute
	}
	if opts.RunAsUser == 0 {
		opts.RunAsUser = 1000
	}
	config = rest.CopyConfig(config)
	if config.QPS == 0 && config.RateLimiter == nil {
		// client-go's default (5/s, burst 10) would throttle a file browser's bursts
		config.QPS, config.Burst = 50, 100
	}
	sc, err := sandbox.New(config, sandbox.Options{Namespace: opts.Namespace})
	if err != nil {
		return nil, err
	}
	sch := runtime.NewScheme()
	if err := corev1.AddToScheme(sch); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(sch, corev1.SchemeGroupVersion)
	cc := rest.CopyConfig(config)
	cc.GroupVersion = &corev1.SchemeGroupVersion
	cc.APIPath = "/api"
	cc.NegotiatedSerializer = serializer.NewCodecFactory(sch).WithoutConversion()
	if cc.UserAgent == "" {
		cc.UserAgent = "yao-sandbox-volume/" + rest.DefaultKubernetesUserAgent()
	}
	core, err := rest.RESTClientFor(cc)
	if err != nil {
		return nil, err
	}
	return &Client{sb: sc, core: core, params: runtime.NewParameterCodec(sch), cfg: config, ns: sc.Namespace(), opts: opts,
		names: map[string]string{}, known: map[string]*v1alpha1.Sandbox{}, helpers: map[string]*helper{}, locks: map[string]*sync.Mutex{}}, nil
}

// NewFromKubeconfig loads the configuration as kubectl does ($KUBECONFIG, ~/.kube/config,
// else in-cluster; path wins when set); an empty opts.Namespace is the context's.
func NewFromKubeconfig(path string, opts Options) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if opts.Namespace == "" {
		if opts.Namespace, _, err = cc.Namespace(); err != nil {
			return nil, err
		}
	}
	return New(rc, opts)
}

// Sandboxes is the sandbox client underneath (same namespace and credentials).
func (c *Client) Sandboxes() *sandbox.Client { return c.sb }

// Sandbox returns the Sandbox of a session: by its canonical name, else by the selectable
// fields spec.userID and spec.chatID; ErrSandboxMissing when there is none.
func (c *Client) Sandbox(ctx context.Context, sessionID string) (*v1alpha1.Sandbox, error) {
	user, chat, err := ParseSession(sessionID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	name := c.names[sessionID]
	c.mu.Unlock()
	if name != "" {
		sb, err := c.sb.Get(ctx, name)
		if err == nil && sb.Spec.UserID == user && sb.Spec.ChatID == chat {
			return sb, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	sb, err := c.sb.GetFor(ctx, user, chat)
	var conflict *sandbox.ConflictError
	if err != nil && (apierrors.IsNotFound(err) || errors.As(err, &conflict) || errors.Is(err, sandbox.ErrInvalidID)) {
		list, lerr := c.sb.List(ctx, sandbox.ListOptions{UserID: user, ChatID: chat})
		if lerr != nil {
			return nil, lerr
		}
		sb, err = nil, ErrSandboxMissing
		for i := range list {
			if list[i].DeletionTimestamp == nil && (sb == nil || list[i].CreationTimestamp.Before(&sb.CreationTimestamp)) {
				sb, err = &list[i], nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.names[sessionID] = sb.Name
	c.mu.Unlock()
	return sb, nil
}

func (c *Client) open(ctx context.Context, sessionID string) (runner, func(), error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, nil, errors.New("yaovolume: the volume is closed")
	}
	c.mu.Lock()
	known := c.known[sessionID]
	c.mu.Unlock()
	if known != nil {
		// Last seen running: go straight to exec, which reads the Sandbox anyway (one GET
		// instead of two); a stale entry is found out before anything runs (errStale).
		return &sandboxRunner{c: c, sb: known, session: sessionID, cached: true}, func() {}, nil
	}
	sb, err := c.Sandbox(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	if sb.IsRunning() {
		c.mu.Lock()
		c.known[sessionID] = sb
		c.mu.Unlock()
		return &sandboxRunner{c: c, sb: sb, session: sessionID}, func() {}, nil
	}
	if sb.DeletionTimestamp != nil {
		return nil, nil, ErrSandboxMissing
	}
	switch c.opts.Stopped {
	case PolicyRefuse:
		return nil, nil, ErrSandboxStopped
	case PolicyWake:
		sb, err = c.sb.EnsureRunning(ctx, sb.Name)
		if err != nil {
			return nil, nil, err
		}
		return &sandboxRunner{c: c, sb: sb}, func() {}, nil
	}
	return c.helperRunner(ctx, sb)
}

// sandboxRunner runs the script in a running sandbox's container (sandbox.Client.Exec:
// the sandbox is marked used, and an ended context kills the command's processes).
type sandboxRunner struct {
	c       *Client
	sb      *v1alpha1.Sandbox
	session string
	cached  bool        // sb came from the cache
	ran     atomic.Bool // a command was sent
}

// errStale: the cached Sandbox no longer runs and nothing was run; the call starts over
// with a fresh look at the Sandbox.
var errStale = errors.New("the sandbox changed state")

func (s *sandboxRunner) Root() string { return s.sb.MountPath() }

func (s *sandboxRunner) Run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	errb := &boundedBuffer{max: 16 << 10}
	argv := append([]string{"sh", "-c", volumeScript, "yaovol"}, args...)
	code, err := s.c.sb.Exec(ctx, s.sb.Name, sandbox.ExecOptions{Command: argv, Stdin: stdin, Stdout: stdout, Stderr: errb, NoStart: true})
	first := !s.ran.Swap(true)
	if err != nil {
		var nr *sandbox.NotReadyError
		if errors.As(err, &nr) || apierrors.IsNotFound(err) {
			s.c.mu.Lock()
			delete(s.c.known, s.session)
			s.c.mu.Unlock()
			if s.cached && first {
				return errStale
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		var st *sandbox.StoppedError
		if errors.As(err, &nr) || errors.As(err, &st) {
			return fmt.Errorf("%w: %v", ErrSandboxBusy, err)
		}
		return err
	}
	if code != 0 {
		return remoteError(code, errb.Bytes())
	}
	return nil
}

// The Client's methods are the engine's; ReadFileTo and WriteFileFrom stream.
func (c *Client) e() *engine { return &engine{b: c} }

func (c *Client) ReadFile(ctx context.Context, sid, p string) ([]byte, os.FileMode, error) {
	return c.e().ReadFile(ctx, sid, p)
}
func (c *Client) ReadFileTo(ctx context.Context, sid, p string, w io.Writer) (os.FileMode, error) {
	return c.e().ReadFileTo(ctx, sid, p, w)
}
func (c *Client) WriteFile(ctx context.Context, sid, p string, data []byte, perm os.FileMode) error {
	return c.e().WriteFile(ctx, sid, p, data, perm)
}
func (c *Client) WriteFileFrom(ctx context.Context, sid, p string, r io.Reader, perm os.FileMode) error {
	return c.e().WriteFileFrom(ctx, sid, p, r, perm)
}
func (c *Client) Stat(ctx context.Context, sid, p string) (*FileInfo, error) {
	return c.e().Stat(ctx, sid, p)
}
func (c *Client) ListDir(ctx context.Context, sid, p string) ([]FileInfo, error) {
	return c.e().ListDir(ctx, sid, p)
}
func (c *Client) Remove(ctx context.Context, sid, p string, recursive bool) error {
	return c.e().Remove(ctx, sid, p, recursive)
}
func (c *Client) Rename(ctx context.Context, sid, o, n string) error {
	return c.e().Rename(ctx, sid, o, n)
}
func (c *Client) MkdirAll(ctx context.Context, sid, p string) error {
	return c.e().MkdirAll(ctx, sid, p)
}
func (c *Client) SyncPush(ctx context.Context, sid, dir string, opts ...SyncOption) (*SyncResult, error) {
	return c.e().SyncPush(ctx, sid, dir, opts...)
}
func (c *Client) SyncPull(ctx context.Context, sid, dir string, opts ...SyncOption) (*SyncResult, error) {
	return c.e().SyncPull(ctx, sid, dir, opts...)
}
func (c *Client) Copy(ctx context.Context, sid, src, dst string, opts ...SyncOption) (*SyncResult, error) {
	return c.e().Copy(ctx, sid, src, dst, opts...)
}
func (c *Client) Zip(ctx context.Context, sid, src, dst string, ex []string) (*ArchiveResult, error) {
	return c.e().Zip(ctx, sid, src, dst, ex)
}
func (c *Client) Unzip(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return c.e().Unzip(ctx, sid, src, dst)
}
func (c *Client) Gzip(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return c.e().Gzip(ctx, sid, src, dst)
}
func (c *Client) Gunzip(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return c.e().Gunzip(ctx, sid, src, dst)
}
func (c *Client) Tar(ctx context.Context, sid, src, dst string, ex []string) (*ArchiveResult, error) {
	return c.e().Tar(ctx, sid, src, dst, ex)
}
func (c *Client) Untar(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return c.e().Untar(ctx, sid, src, dst)
}
func (c *Client) Tgz(ctx context.Context, sid, src, dst string, ex []string) (*ArchiveResult, error) {
	return c.e().Tgz(ctx, sid, src, dst, ex)
}
func (c *Client) Untgz(ctx context.Context, sid, src, dst string) (*ArchiveResult, error) {
	return c.e().Untgz(ctx, sid, src, dst)
}

// Close removes the helper pods this client made and refuses further calls.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	hs := make([]*helper, 0, len(c.helpers))
	for _, h := range c.helpers {
		hs = append(hs, h)
	}
	c.mu.Unlock()
	var errs []error
	for _, h := range hs {
		errs = append(errs, c.dropHelper(h, nil))
	}
	return errors.Join(errs...)
}

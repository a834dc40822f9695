// Package yaoruntime adapts yao-sandbox to the method set of Yao's container runtime
// interface (what Yao's sandbox manager calls on Docker): Create, Start, Stop, Remove,
// Exec, ExecStream, Inspect, List and Close, so Yao can run its sandboxes as Sandboxes
// on Kubernetes. A container ID here is the Sandbox's name.
//
// What maps and what does not:
//   - Create is get-or-create of the Sandbox of (UserID, ChatID) (see Identity); the pod
//     starts at once (Kubernetes has no "created but not started" state worth keeping),
//     Start waits until it runs.
//   - Cmd becomes spec.args (like Docker's CMD, the image's entrypoint stays), Env
//     spec.env, Memory and CPUs the limits, Labels the Sandbox's labels. WorkingDir has no
//     place in the pod spec: it is kept in an annotation and used as the default WorkDir
//     of Exec and ExecStream.
//   - Ports become spec.ports (named "tcp-5900", "udp-53"; protocol tcp or udp): the
//     container's ports. A HostPort cannot be published on a Kubernetes node; it is
//     ignored, and the port is reached with sandbox.Client.PortForward (or the Sandbox's
//     Service). Inspect and List report spec.ports back (HostPort 0).
//   - User (the uid to run as) cannot be expressed by the Sandbox API: Create refuses it
//     unless Options.IgnoreUnsupported is set.
//   - YAO_USER_ID, YAO_CHAT_ID and YAO_SANDBOX_NAME come from the controller: an Env
//     entry with the Sandbox's own value (Yao passes YAO_USER_ID) is dropped, another
//     value is refused (ErrUnsupported).
package yaoruntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

// AnnotationWorkDir keeps CreateOptions.WorkingDir on the Sandbox.
const AnnotationWorkDir = "sandbox.yaoapps.com/yao-workdir"

// Labels Create reads the identity from when CreateOptions.UserID/ChatID are empty.
const (
	LabelUserID = "sandbox.yaoapps.com/user-id"
	LabelChatID = "sandbox.yaoapps.com/chat-id"
)

// ErrUnsupported is wrapped by Create's error for an option the Sandbox API cannot express.
var ErrUnsupported = errors.New("not supported by yao-sandbox")

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("yaoruntime: runtime closed")

// PortMapping is a container port published on a host port.
type PortMapping struct {
	ContainerPort int
	HostPort      int
	Protocol      string // "tcp" (default) or "udp"
}

// CreateOptions are Yao's container create options.
type CreateOptions struct {
	Name       string // informational: the ID is the canonical name of (UserID, ChatID)
	Image      string
	Cmd        []string
	Env        map[string]string
	WorkingDir string
	Memory     int64   // bytes, 0 = the controller's default
	CPUs       float64 // cores, 0 = the controller's default
	Ports      []PortMapping
	Labels     map[string]string
	User       string

	// UserID and ChatID name the Sandbox's owner (see Identity).
	UserID, ChatID string
	// Lifecycle of a new Sandbox (default: its SandboxClass's, else the controller's, session).
	Lifecycle v1alpha1.Lifecycle
	// IdleTimeout of a new Sandbox, e.g. "30m" (default: the controller's).
	IdleTimeout string
}

// ExecOptions are Yao's exec options.
type ExecOptions struct {
	WorkDir string
	Env     map[string]string
	TTY     bool
	// Timeout ends the command after this long (0: only ctx ends it).
	Timeout time.Duration
}

// ExecResult is the outcome of Exec.
type ExecResult struct {
	ExitCode int
	Stdout   string
	Stderr   string
}

// ContainerInfo is what Inspect and List report.
type ContainerInfo struct {
	ID     string
	Name   string
	Image  string // "" when the controller's default image is used
	Status string // created, running, exited, removing (Docker's words)
	IP     string
	Ports  []PortMapping
	Labels map[string]string
}

// ListOptions selects containers: only running ones unless All; Labels must all match.
type ListOptions struct {
	All    bool
	Labels map[string]string
}

// Options tunes New.
type Options struct {
	// DefaultUserID is the owner of containers created with neither UserID nor the
	// LabelUserID label (default "yao"); their chat is then CreateOptions.Name.
	DefaultUserID string
	// IgnoreUnsupported makes Create drop User (and ports of another protocol than tcp
	// or udp) instead of failing.
	IgnoreUnsupported bool
	// StopTimeout bounds Stop's wait when its timeout argument is 0 (default 60 s).
	StopTimeout time.Duration
}

// Runtime is the adapter. Safe for concurrent use.
type Runtime struct {
	c    sandbox.Interface
	opts Options

	mu      sync.Mutex
	closed  bool
	streams map[*ExecStream]struct{}
}

// New returns a Runtime over c: a *sandbox.Client, or a *sandboxfake.Fake in tests.
func New(c sandbox.Interface, opts Options) *Runtime {
	if opts.DefaultUserID == "" {
		opts.DefaultUserID = "yao"
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = time.Minute
	}
	return &Runtime{c: c, opts: opts, streams: map[*ExecStream]struct{}{}}
}

func (r *Runtime) check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	return nil
}

// Identity is the (user, chat) Create uses: the UserID/ChatID fields, else the labels
// LabelUserID/LabelChatID, else (Options.DefaultUserID, Name).
func (r *Runtime) Identity(o CreateOptions) (string, string, error) {
	user, chat := o.UserID, o.ChatID
	if user == "" {
		user = o.Labels[LabelUserID]
	}
	if chat == "" {
		chat = o.Labels[LabelChatID]
	}
	if user == "" {
		user = r.opts.DefaultUserID
	}
	if chat == "" {
		chat = o.Name
	}
	if chat == "" {
		return "", "", errors.New("yaoruntime: create: no ChatID, chat-id label or Name")
	}
	return user, chat, nil
}

// Create returns the ID of the Sandbox of the options' (user, chat), creating it when
// there is none (idempotent: a second Create gives the same ID).
func (r *Runtime) Create(ctx context.Context, o CreateOptions) (string, error) {
	if err := r.check(); err != nil {
		return "", err
	}
	ports, err := portsOf(o.Ports, r.opts.IgnoreUnsupported)
	if err != nil {
		return "", err
	}
	if !r.opts.IgnoreUnsupported {
		if o.User != "" {
			return "", fmt.Errorf("yaoruntime: create: user %q: %w (sandboxes run as the image's non-root user)", o.User, ErrUnsupported)
		}
	}
	user, chat, err := r.Identity(o)
	if err != nil {
		return "", err
	}
	spec := v1alpha1.SandboxSpec{Image: o.Image, Args: o.Cmd, Lifecycle: o.Lifecycle, IdleTimeout: o.IdleTimeout,
		Ports: ports}
	// The controller sets these from the Sandbox itself (the API server refuses them in
	// spec.env). Yao passes YAO_USER_ID among its sandbox variables: the same value is
	// dropped (the container gets it from the controller), another one refused.
	fromController := map[string]string{"YAO_USER_ID": user, "YAO_CHAT_ID": chat, "YAO_SANDBOX_NAME": ""}
	for _, k := range sortedKeys(o.Env) {
		if want, ok := fromController[k]; ok {
			if want != "" && o.Env[k] == want {
				continue
			}
			return "", fmt.Errorf("yaoruntime: create: env %s=%q: %w (the controller sets it from the Sandbox: user %q, chat %q)",
				k, o.Env[k], ErrUnsupported, user, chat)
		}
		spec.Env = append(spec.Env, v1alpha1.EnvVar{Name: k, Value: o.Env[k]})
	}
	if o.Memory > 0 || o.CPUs > 0 {
		spec.Resources = &v1alpha1.Resources{}
		if o.Memory > 0 {
			m := intstr.FromString(strconv.FormatInt(o.Memory, 10))
			spec.Resources.Memory = &m
		}
		if o.CPUs > 0 {
			mc := int64(o.CPUs*1000 + 0.5)
			if mc < 1 {
				mc = 1
			}
			cpu := intstr.FromString(strconv.FormatInt(mc, 10) + "m")
			spec.Resources.CPU = &cpu
		}
	}
	var ann map[string]string
	if o.WorkingDir != "" {
		ann = map[string]string{AnnotationWorkDir: o.WorkingDir}
	}
	sb, _, err := r.c.GetOrCreate(ctx, sandbox.Request{UserID: user, ChatID: chat, Spec: spec, Labels: o.Labels, Annotations: ann})
	if err != nil {
		return "", err
	}
	return sb.Name, nil
}

// Start starts the Sandbox (clears spec.paused, marks it used) and waits until it runs.
func (r *Runtime) Start(ctx context.Context, id string) error {
	if err := r.check(); err != nil {
		return err
	}
	_, err := r.c.EnsureRunning(ctx, id)
	return err
}

// Stop pauses the Sandbox (its pod is deleted, its workspace kept) and waits up to
// timeout (Options.StopTimeout when 0) until it is Stopped.
func (r *Runtime) Stop(ctx context.Context, id string, timeout time.Duration) error {
	if err := r.check(); err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = r.opts.StopTimeout
	}
	if _, err := r.c.Stop(ctx, id); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := r.c.WaitStopped(wctx, id)
	return err
}

// Remove deletes the Sandbox and its workspace. Without force a running Sandbox is
// refused (stop it first) and a missing one is an error, as Docker does.
func (r *Runtime) Remove(ctx context.Context, id string, force bool) error {
	if err := r.check(); err != nil {
		return err
	}
	if !force {
		sb, err := r.c.Get(ctx, id)
		if err != nil {
			return err
		}
		if sb.Status.Phase == v1alpha1.PhaseRunning || sb.Status.Phase == v1alpha1.PhaseCreating {
			return fmt.Errorf("yaoruntime: remove %s: the sandbox is %s: stop it first or force", id, sb.Status.Phase)
		}
	}
	return r.c.Remove(ctx, id)
}

// execOptions merges the container's default working directory into o.
func (r *Runtime) execOptions(ctx context.Context, id string, cmd []string, o ExecOptions) (sandbox.ExecOptions, error) {
	wd := o.WorkDir
	if wd == "" {
		sb, err := r.c.Get(ctx, id)
		if err != nil {
			return sandbox.ExecOptions{}, err
		}
		wd = sb.Annotations[AnnotationWorkDir]
	}
	return sandbox.ExecOptions{Command: cmd, WorkDir: wd, Env: o.Env, TTY: o.TTY, Timeout: o.Timeout}, nil
}

// Exec runs cmd to completion and returns its exit code and output (the sandbox is
// started first when it is stopped).
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string, o ExecOptions) (*ExecResult, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	eo, err := r.execOptions(ctx, id, cmd, o)
	if err != nil {
		return nil, err
	}
	var stdout, stderr strings.Builder
	eo.Stdout, eo.Stderr = &stdout, &stderr
	code, err := r.c.Exec(ctx, id, eo)
	if err != nil {
		return nil, err
	}
	return &ExecResult{ExitCode: code, Stdout: stdout.String(), Stderr: stderr.String()}, nil
}

// ExecStream is a running command: write its stdin (Close sends EOF), read its stdout
// and stderr (they end when it ends), Wait for its exit code, or Cancel it.
type ExecStream struct {
	Stdin  io.WriteCloser
	Stdout io.Reader
	Stderr io.Reader

	cancel context.CancelFunc
	done   chan struct{}
	code   int
	err    error
	r      *Runtime
}

// Wait blocks until the command ends and returns its exit code (see sandbox.Client.Exec
// for the errors).
func (s *ExecStream) Wait() (int, error) {
	<-s.done
	return s.code, s.err
}

// Cancel ends the command: its session is closed and its processes in the sandbox get
// SIGTERM, then SIGKILL after a grace (sandbox.ExecOptions.KeepRunning, CancelGrace);
// Wait then returns.
func (s *ExecStream) Cancel() { s.cancel() }

// ExecStream starts cmd with pipes for its streams. Its stdout and stderr must be read
// (or the command blocks once the pipes are full, as with os/exec).
func (r *Runtime) ExecStream(ctx context.Context, id string, cmd []string, o ExecOptions) (*ExecStream, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	eo, err := r.execOptions(ctx, id, cmd, o)
	if err != nil {
		return nil, err
	}
	// Start (or wake) the sandbox before the pipes exist, so a start failure is the
	// caller's error here and not a stream that ends at once.
	if _, err := r.c.EnsureRunning(ctx, id); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	eo.Stdin, eo.Stdout, eo.Stderr = inR, outW, errW
	s := &ExecStream{Stdin: inW, Stdout: outR, Stderr: errR, cancel: cancel, done: make(chan struct{}), r: r}
	r.mu.Lock()
	r.streams[s] = struct{}{}
	r.mu.Unlock()
	go func() {
		s.code, s.err = r.c.Exec(ctx, id, eo)
		ends := s.err
		if ends == nil {
			ends = io.EOF
		}
		outW.CloseWithError(ends)
		errW.CloseWithError(ends)
		inR.CloseWithError(io.ErrClosedPipe)
		cancel()
		r.mu.Lock()
		delete(r.streams, s)
		r.mu.Unlock()
		close(s.done)
	}()
	return s, nil
}

// Inspect describes the Sandbox.
func (r *Runtime) Inspect(ctx context.Context, id string) (*ContainerInfo, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	sb, err := r.c.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	info := infoOf(sb)
	return &info, nil
}

// List returns the Sandboxes of the namespace (running ones unless o.All) whose labels
// match o.Labels, sorted by name.
func (r *Runtime) List(ctx context.Context, o ListOptions) ([]ContainerInfo, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	sbs, err := r.c.List(ctx, sandbox.ListOptions{LabelSelector: labels.SelectorFromSet(o.Labels).String()})
	if err != nil {
		return nil, err
	}
	out := make([]ContainerInfo, 0, len(sbs))
	for i := range sbs {
		info := infoOf(&sbs[i])
		if o.All || info.Status == "running" {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Close cancels the open ExecStreams, waits for them, and makes every later call fail
// with ErrClosed. The Sandboxes themselves are left as they are.
func (r *Runtime) Close() error {
	r.mu.Lock()
	r.closed = true
	open := make([]*ExecStream, 0, len(r.streams))
	for s := range r.streams {
		open = append(open, s)
	}
	r.mu.Unlock()
	for _, s := range open {
		s.Cancel()
		<-s.done
	}
	return nil
}

// portsOf maps Docker-style port mappings to spec.ports: one per (port, protocol), named
// "tcp-5900"; the host port is not kept (see the package comment).
func portsOf(in []PortMapping, lax bool) ([]v1alpha1.Port, error) {
	var out []v1alpha1.Port
	seen := map[string]bool{}
	for _, m := range in {
		proto := strings.ToLower(m.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		if proto != "tcp" && proto != "udp" {
			if lax {
				continue
			}
			return nil, fmt.Errorf("yaoruntime: create: port %d/%s: %w (tcp or udp)", m.ContainerPort, m.Protocol, ErrUnsupported)
		}
		if m.ContainerPort < 1 || m.ContainerPort > 65535 {
			return nil, fmt.Errorf("yaoruntime: create: container port %d is not in 1-65535", m.ContainerPort)
		}
		name := fmt.Sprintf("%s-%d", proto, m.ContainerPort)
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, v1alpha1.Port{Name: name, Port: int32(m.ContainerPort), Protocol: strings.ToUpper(proto)})
	}
	return out, nil
}

// infoOf maps a Sandbox to a ContainerInfo.
func infoOf(sb *v1alpha1.Sandbox) ContainerInfo {
	var ports []PortMapping
	for _, p := range sb.Spec.Ports {
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		ports = append(ports, PortMapping{ContainerPort: int(p.Port), Protocol: proto})
	}
	return ContainerInfo{ID: sb.Name, Name: sb.Name, Image: sb.Spec.Image, Status: StatusOf(sb),
		IP: sb.Status.PodIP, Ports: ports, Labels: sb.Labels}
}

// StatusOf is the Sandbox's state in Docker's words: removing (being deleted), running
// (Running), exited (Stopping, Stopped, Succeeded, Failed, or paused), created (waiting
// or starting).
func StatusOf(sb *v1alpha1.Sandbox) string {
	switch {
	case sb.DeletionTimestamp != nil:
		return "removing"
	case sb.IsRunning():
		return "running"
	case sb.Spec.Paused:
		return "exited"
	}
	switch sb.Status.Phase {
	case v1alpha1.PhaseStopping, v1alpha1.PhaseStopped, v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed:
		return "exited"
	}
	return "created"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

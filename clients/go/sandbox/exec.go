package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

// ExecOptions is one command to run in a sandbox.
type ExecOptions struct {
	// Command is the argv, passed exactly (no shell in between).
	Command []string
	// Stdin, when not nil, is sent to the command, closed at EOF.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output as it arrives (nil: discarded).
	// With TTY, stderr is merged into stdout.
	Stdout, Stderr io.Writer
	// TTY allocates a terminal; SizeQueue (optional) feeds it resize events.
	TTY       bool
	SizeQueue remotecommand.TerminalSizeQueue
	// WorkDir runs the command there (through sh -c 'cd -- "$0" && exec "$@"').
	WorkDir string
	// Env adds variables (through env(1)).
	Env map[string]string
	// Timeout ends the command after this long (0: only ctx ends it).
	Timeout time.Duration
	// NoStart fails with a *NotReadyError instead of starting a stopped sandbox.
	NoStart bool
	// KeepRunning leaves the command running in the sandbox when ctx or Timeout ends it.
	// By default Exec then ends it before returning: closing an exec stream does not end
	// the process (neither the kubelet nor the container runtime kills it), so every
	// command runs with a marker in its environment (YAO_SANDBOX_EXEC_ID, through env(1);
	// everything it starts inherits it), and a second exec sends SIGTERM to every process
	// that carries it, then SIGKILL after CancelGrace. That needs env(1) in the image, and
	// sh, grep (with -z), kill and sleep for the kill; set KeepRunning for an image without them.
	KeepRunning bool
	// CancelGrace is how long the processes of an ended command get between SIGTERM and
	// SIGKILL (default 2 s).
	CancelGrace time.Duration
}

// ExecMarkerEnv is the environment variable that marks the processes of one command (see
// ExecOptions.KeepRunning).
const ExecMarkerEnv = "YAO_SANDBOX_EXEC_ID"

// defaultCancelGrace is ExecOptions.CancelGrace when unset.
const defaultCancelGrace = 2 * time.Second

// killScript ends the processes of one command: those whose environment holds the
// marker "$1=$2" (one grep over every /proc/PID/environ). SIGTERM first, then, once $3
// tenths of a second have passed with some left, SIGKILL; it fails when one still runs a
// second later. A pid is signalled right after grep found the marker in its environ, and
// a pid that was reused meanwhile belongs to a process without the marker (the window is
// that of one grep). Zombies have an empty environ and do not count. POSIX sh with grep
// -z, kill and sleep (GNU or busybox).
const killScript = `m="$1=$2"; g=$3
sig() {
	n=0
	for f in $(grep -lszxF -- "$m" /proc/[0-9]*/environ); do
		p=${f#/proc/}
		kill -s "$1" "${p%/environ}" 2>/dev/null && n=$((n + 1))
	done
	echo $n
}
[ "$(sig TERM)" = 0 ] && exit 0
i=0
while [ $i -lt "$g" ]; do
	sleep 0.1
	[ "$(sig 0)" = 0 ] && exit 0
	i=$((i + 1))
done
sig KILL >/dev/null
i=0
while [ $i -lt 10 ]; do
	sleep 0.1
	[ "$(sig 0)" = 0 ] && exit 0
	i=$((i + 1))
done
echo "processes of the command still run after SIGKILL" >&2
exit 1`

// markArgv runs argv with the marker id in its environment (env MARKER=id argv...;
// through sh -c 'exec "$@"' when argv[0] contains '=', which env would take as a
// variable).
func markArgv(argv []string, id string) []string {
	v := []string{"env", ExecMarkerEnv + "=" + id}
	if strings.Contains(argv[0], "=") {
		v = append(v, "sh", "-c", `exec "$@"`, "sh")
	}
	return append(v, argv...)
}

// killArgv is the second exec that ends the processes marked with id (killScript).
func killArgv(id string, grace time.Duration) []string {
	tenths := int64(grace / (100 * time.Millisecond))
	if tenths < 0 {
		tenths = 0
	}
	return []string{"sh", "-c", killScript, "yao-sandbox-kill", ExecMarkerEnv, id, strconv.FormatInt(tenths, 10)}
}

// newExecID is a fresh marker value: 16 random hex digits.
func newExecID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// StoppedError: the sandbox was stopped, deleted or restarted while the command ran, so
// its stream ended or it was killed (the CLI exits 75 then). Running the command again
// starts the sandbox again.
type StoppedError struct {
	Name string
	Why  string
	Err  error // the stream's error, when it failed
}

func (e *StoppedError) Error() string { return fmt.Sprintf("sandbox %q %s", e.Name, e.Why) }
func (e *StoppedError) Unwrap() error { return e.Err }

// EnsureRunning returns the Sandbox running: a paused one is unpaused, a stopped one
// woken (last-used-at = now), then waited for (up to StartTimeout). A running one is
// only marked used (throttled).
func (c *Client) EnsureRunning(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	sb, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	c.noteUsed(sb, time.Time{})
	if sb.DeletionTimestamp != nil {
		_, err := runningState(sb)
		return nil, err
	}
	if sb.IsRunning() {
		if _, err := c.MarkUsed(ctx, name); err != nil {
			return nil, err
		}
		return sb, nil
	}
	if _, err := c.Start(ctx, name); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, c.StartTimeout)
	defer cancel()
	return c.WaitReady(wctx, name)
}

// Exec runs opts.Command in the sandbox's container and returns its exit code (a
// non-zero code is not an error). The sandbox is started first when it is not running
// (unless opts.NoStart), and marked used before, during (a heartbeat) and after. err is
// for what kept the command from running or finishing: the sandbox (a *NotReadyError, a
// *StoppedError), the connection, ctx or opts.Timeout. The exit code is -1 when unknown.
//
// The transport is the API server's pods/exec over WebSocket (v5.channel.k8s.io) with a
// fallback to SPDY for servers that refuse the upgrade, as kubectl does.
func (c *Client) Exec(ctx context.Context, name string, opts ExecOptions) (int, error) {
	argv, err := execArgv(opts.Command, opts.Env, opts.WorkDir)
	if err != nil {
		return -1, err
	}
	var sb *v1alpha1.Sandbox
	if opts.NoStart {
		sb, err = c.running(ctx, name)
	} else {
		sb, err = c.EnsureRunning(ctx, name)
	}
	if err != nil {
		return -1, err
	}
	return c.execSandbox(ctx, sb, argv, opts)
}

// running returns the Sandbox when it runs (marking it used), else a *NotReadyError.
func (c *Client) running(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	sb, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	ok, err := runningState(sb)
	if err == nil && !ok {
		err = notReady(sb, "Running", "it is not running", nil)
	}
	if err != nil {
		return nil, err
	}
	c.noteUsed(sb, time.Time{})
	if _, err := c.MarkUsed(ctx, name); err != nil {
		return nil, err
	}
	return sb, nil
}

// execSandbox runs argv in the running sandbox sb (see Exec).
func (c *Client) execSandbox(ctx context.Context, sb *v1alpha1.Sandbox, argv []string, opts ExecOptions) (int, error) {
	name := sb.Name
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	id := ""
	if !opts.KeepRunning {
		var err error
		if id, err = newExecID(); err != nil {
			return -1, err
		}
		argv = markArgv(argv, id)
	}
	stop := c.Heartbeat(context.WithoutCancel(ctx), name, nil)
	code, err := c.execInPod(ctx, sb.Status.PodName, argv, opts)
	stop()
	if err != nil && ctx.Err() != nil && id != "" {
		// ctx or the timeout ended the command: end its processes too (unless its pod
		// went away meanwhile, and they with it).
		if kerr := c.endCommand(context.WithoutCancel(ctx), sb.Status.PodName, id, opts.CancelGrace); kerr != nil {
			look, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if c.stoppedUnder(look, sb) == "" {
				err = fmt.Errorf("%w; the command may still run in the sandbox: %v", err, kerr)
			}
			cancel()
		}
	}
	// After the command (even one ctx ended): best effort, bounded.
	after, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, _ = c.MarkUsed(after, name) // it was just used

	if err != nil || code == 137 || code == 143 {
		// The stream broke or the command was killed: was the sandbox stopped under it?
		if why := c.stoppedUnder(after, sb); why != "" {
			return code, &StoppedError{Name: name, Why: why, Err: err}
		}
	}
	if err != nil {
		return code, fmt.Errorf("exec in sandbox %q: %w", name, err)
	}
	return code, nil
}

// endCommand ends the processes of the command marked with id in pod (killScript), within
// grace plus 20 s.
func (c *Client) endCommand(ctx context.Context, pod, id string, grace time.Duration) error {
	if grace <= 0 {
		grace = defaultCancelGrace
	}
	ctx, cancel := context.WithTimeout(ctx, grace+20*time.Second)
	defer cancel()
	errb := &boundedBuffer{max: stderrKeep}
	code, err := c.execInPod(ctx, pod, killArgv(id, grace), ExecOptions{Stderr: errb})
	if err != nil {
		return err
	}
	if code != 0 {
		if msg := RemoteMessage(errb.Bytes()); msg != "" {
			return fmt.Errorf("kill: %s (exit code %d)", msg, code)
		}
		return fmt.Errorf("kill: exit code %d", code)
	}
	return nil
}

// execInPod runs argv in the sandbox container of pod with opts' streams.
func (c *Client) execInPod(ctx context.Context, pod string, argv []string, opts ExecOptions) (int, error) {
	req := c.core.Post().Namespace(c.namespace).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: v1alpha1.ContainerName,
			Command:   argv,
			Stdin:     opts.Stdin != nil,
			Stdout:    true,
			Stderr:    !opts.TTY,
			TTY:       opts.TTY,
		}, c.params)
	ws, err := remotecommand.NewWebSocketExecutor(c.config, "GET", req.URL().String())
	if err != nil {
		return -1, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.config, "POST", req.URL())
	if err != nil {
		return -1, err
	}
	exe, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return -1, err
	}
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil && !opts.TTY {
		stderr = io.Discard
	}
	if opts.TTY {
		stderr = nil
	}
	err = exe.StreamWithContext(ctx, remotecommand.StreamOptions{
		Stdin: opts.Stdin, Stdout: stdout, Stderr: stderr, Tty: opts.TTY, TerminalSizeQueue: opts.SizeQueue,
	})
	if err == nil {
		return 0, nil
	}
	var exit utilexec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		return exit.ExitStatus(), nil
	}
	if ctx.Err() != nil {
		return -1, fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return -1, err
}

// stoppedUnder says why the sandbox stopped under a command that ran in before's pod,
// or "" when it did not (the rules of the CLI's cli_sandbox_stopped).
func (c *Client) stoppedUnder(ctx context.Context, before *v1alpha1.Sandbox) string {
	after, err := c.Get(ctx, before.Name)
	if IsNotFound(err) {
		return "was deleted while the command ran"
	}
	if err != nil {
		return ""
	}
	return stoppedWhy(before, after)
}

// stoppedWhy compares the Sandbox before and after a command (pure; see stoppedUnder).
func stoppedWhy(before, after *v1alpha1.Sandbox) string {
	if after.DeletionTimestamp != nil || after.UID != before.UID {
		return "was deleted while the command ran"
	}
	reason := ""
	if c := after.ReadyCondition(); c != nil {
		reason = c.Reason
	}
	if after.Spec.Paused || after.Status.Phase == v1alpha1.PhaseStopping || after.Status.Phase == v1alpha1.PhaseStopped ||
		reason == v1alpha1.ReasonIdle || reason == v1alpha1.ReasonPaused {
		if reason != "" {
			return "was stopped while the command ran (reason: " + reason + ")"
		}
		return "was stopped while the command ran"
	}
	if after.Status.PodName != before.Status.PodName ||
		!after.Status.StartedAt.Equal(before.Status.StartedAt) {
		return "was restarted while the command ran (its pod was replaced)"
	}
	return ""
}

// execArgv wraps cmd for env and workdir as the CLI's cli_exec_argv does, passing every
// word exactly:
//
//	no env, no dir:  CMD...
//	env only:        env K=V... CMD...   (through sh -c 'exec "$@"' sh when CMD[0]
//	                                      contains '=', which env would take as a K=V)
//	dir:             [env K=V...] sh -c 'cd -- "$0" && exec "$@"' DIR CMD...
//
// Env is applied in name order.
func execArgv(cmd []string, env map[string]string, workdir string) ([]string, error) {
	if len(cmd) == 0 || cmd[0] == "" {
		return nil, errors.New("exec: no command")
	}
	names := make([]string, 0, len(env))
	for k := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("exec: invalid environment variable name %q", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	var v []string
	if len(names) > 0 {
		v = append(v, "env")
		for _, k := range names {
			v = append(v, k+"="+env[k])
		}
	}
	switch {
	case workdir != "":
		v = append(v, "sh", "-c", `cd -- "$0" && exec "$@"`, workdir)
	case len(names) > 0 && strings.Contains(cmd[0], "="):
		v = append(v, "sh", "-c", `exec "$@"`, "sh")
	}
	return append(v, cmd...), nil
}

package sandboxfake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

// ExecCall is one command the fake was asked to run, as recorded by ExecCalls.
type ExecCall struct {
	Sandbox string
	Pod     string // the pod it ran in
	Command []string
	Env     map[string]string
	WorkDir string
	TTY     bool
	// Stdin is what the command read from ExecOptions.Stdin: all of it for a scripted
	// result; nil for a handler (which reads Stdin itself).
	Stdin []byte
	// Ended is true when ctx or ExecOptions.Timeout ended the command before it finished;
	// Killed is true when, on top of that, its processes were ended (as the Client does
	// unless ExecOptions.KeepRunning).
	Ended, Killed bool
}

// ExecResult is what a scripted command does: it reads its stdin to the end (as a
// filter does; use a handler for a command that must not), writes Stdout and Stderr,
// runs for Duration and ends with ExitCode and Err.
type ExecResult struct {
	Stdout, Stderr string
	ExitCode       int
	// Err is returned as Exec's error (with ExitCode), e.g. a *sandbox.StoppedError.
	Err error
	// Duration is how long the command runs before it ends with the above; ctx (or
	// ExecOptions.Timeout) ending first ends it with ctx's error and exit code -1.
	Duration time.Duration
}

// ExecHandler runs a command that no scripted result matches: it reads io.Stdin (nil when
// the caller gave none), writes io.Stdout and io.Stderr (never nil) and returns the exit
// code; an error is returned as Exec's error. It should end when ctx ends.
type ExecHandler func(ctx context.Context, call *ExecCall, io ExecIO) (int, error)

// ExecIO are the streams of a command given to an ExecHandler.
type ExecIO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// scripted is one SetExecResult.
type scripted struct {
	sandbox string // "" = any
	prefix  []string
	result  ExecResult
}

// SetExecResult makes every command whose argv starts with prefix (in any Sandbox) do r.
// The longest matching prefix wins, and of equal ones the latest; an empty prefix
// matches every command.
func (f *Fake) SetExecResult(prefix []string, r ExecResult) { f.SetExecResultIn("", prefix, r) }

// SetExecResultIn is SetExecResult for the commands of one Sandbox only ("" = any); they
// win over results for any Sandbox with the same prefix.
func (f *Fake) SetExecResultIn(sandboxName string, prefix []string, r ExecResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results = append(f.results, scripted{sandbox: sandboxName, prefix: append([]string(nil), prefix...), result: r})
}

// SetExecHandler runs h for the commands no scripted result matches (nil: they fail with
// an error that names them, ErrNotScripted).
func (f *Fake) SetExecHandler(h ExecHandler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handler = h
}

// ErrNotScripted is wrapped by the error of a command with no scripted result and no
// handler.
var ErrNotScripted = errors.New("sandboxfake: no result scripted for this command")

// ExecCalls returns the commands run so far, oldest first (file helpers are not among
// them: they work on the fake's files directly).
func (f *Fake) ExecCalls() []ExecCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]ExecCall, len(f.calls))
	for i, c := range f.calls {
		out[i] = *c
	}
	return out
}

// lookup is the scripted result for argv in sandboxName (f.mu held).
func (f *Fake) lookup(sandboxName string, argv []string) (ExecResult, bool) {
	best, bestLen, found := ExecResult{}, -1, false
	for _, s := range f.results {
		if s.sandbox != "" && s.sandbox != sandboxName || len(s.prefix) > len(argv) {
			continue
		}
		match := true
		for i, w := range s.prefix {
			if argv[i] != w {
				match = false
				break
			}
		}
		score := 2 * len(s.prefix)
		if s.sandbox != "" {
			score++
		}
		if match && score >= bestLen {
			best, bestLen, found = s.result, score, true
		}
	}
	return best, found
}

// running returns the Sandbox for a use: started and waited for, or (NoStart) a
// *sandbox.NotReadyError unless it runs.
func (f *Fake) running(ctx context.Context, name string, noStart bool) (*v1alpha1.Sandbox, error) {
	if !noStart {
		return f.EnsureRunning(ctx, name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, err := f.get(name)
	if err != nil {
		return nil, err
	}
	ok, err := sandbox.RunningState(sb)
	if err == nil && !ok {
		err = sandbox.NewNotReadyError(sb, "Running", "it is not running", nil)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.markUsed(name); err != nil {
		return nil, err
	}
	return sb, nil
}

// Exec runs a scripted result (SetExecResult) or the handler (SetExecHandler) for
// opts.Command, with the Client's rules around it: the command and env are checked, the
// Sandbox is started first (unless opts.NoStart) and marked used, opts.Timeout and ctx
// end it (ctx's error, exit code -1; the call is recorded as Ended and, unless
// opts.KeepRunning, Killed). A non-zero exit code is not an error.
func (f *Fake) Exec(ctx context.Context, name string, opts sandbox.ExecOptions) (int, error) {
	if len(opts.Command) == 0 || opts.Command[0] == "" {
		return -1, errors.New("exec: no command")
	}
	for k := range opts.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return -1, fmt.Errorf("exec: invalid environment variable name %q", k)
		}
	}
	f.mu.Lock()
	err := f.injected(OpExec)
	f.mu.Unlock()
	if err != nil {
		return -1, err
	}
	sb, err := f.running(ctx, name, opts.NoStart)
	if err != nil {
		return -1, err
	}
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	call := &ExecCall{Sandbox: name, Pod: sb.Status.PodName, Command: append([]string(nil), opts.Command...),
		WorkDir: opts.WorkDir, TTY: opts.TTY}
	if len(opts.Env) > 0 {
		call.Env = map[string]string{}
		for k, v := range opts.Env {
			call.Env[k] = v
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, call)
	result, scriptedOK := f.lookup(name, opts.Command)
	handler := f.handler
	f.mu.Unlock()

	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if opts.TTY {
		stderr = stdout
	} else if stderr == nil {
		stderr = io.Discard
	}
	var code int
	switch {
	case scriptedOK:
		code, err = runScripted(ctx, call, result, opts.Stdin, stdout, stderr, &f.mu)
	case handler != nil:
		code, err = handler(ctx, call, ExecIO{Stdin: opts.Stdin, Stdout: stdout, Stderr: stderr})
	default:
		code, err = -1, fmt.Errorf("%w: %q in sandbox %q", ErrNotScripted, opts.Command, name)
	}
	if err != nil && ctx.Err() != nil {
		f.mu.Lock()
		call.Ended, call.Killed = true, !opts.KeepRunning
		f.mu.Unlock()
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		code, err = -1, fmt.Errorf("exec in sandbox %q: %w", name, err)
	}
	f.mu.Lock()
	_, _ = f.markUsed(name)
	f.mu.Unlock()
	return code, err
}

// runScripted plays r: stdin read to its end (kept in call.Stdin), the output written,
// then r.Duration; ctx ending first ends it with ctx's error.
func runScripted(ctx context.Context, call *ExecCall, r ExecResult, stdin io.Reader, stdout, stderr io.Writer, mu *sync.Mutex) (int, error) {
	if stdin != nil {
		var in bytes.Buffer
		read := make(chan struct{})
		go func() {
			_, _ = io.Copy(&in, stdin)
			close(read)
		}()
		select {
		case <-read:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
		mu.Lock()
		call.Stdin = in.Bytes()
		mu.Unlock()
	}
	_, _ = io.WriteString(stdout, r.Stdout)
	_, _ = io.WriteString(stderr, r.Stderr)
	if r.Duration > 0 {
		t := time.NewTimer(r.Duration)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
	return r.ExitCode, r.Err
}

// ---- logs -------------------------------------------------------------------------------

// logLine is one line of a container's output.
type logLine struct {
	at   time.Time
	text string // with its newline
}

// AppendLogs adds output of the Sandbox's container (split into lines, stamped with
// Now), as its main process would print it; Logs returns it, and Follow streams it. A
// new pod (SetRunning after a stop, or a start) starts with no logs.
func (f *Fake) AppendLogs(name, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.moveTo(name, func(b *box) {
		now := f.now()
		for text != "" {
			i := strings.IndexByte(text, '\n')
			if i < 0 {
				i = len(text) - 1
			}
			b.logs = append(b.logs, logLine{at: now, text: text[:i+1]})
			text = text[i+1:]
		}
	})
}

// selectLogs renders the lines opts asks for, from index from on (TailLines and the
// times apply to the first call only, when from is 0).
func selectLogs(lines []logLine, opts sandbox.LogOptions, first bool) []byte {
	if first {
		if opts.Since > 0 || !opts.SinceTime.IsZero() {
			var keep []logLine
			for _, l := range lines {
				if (opts.Since > 0 && time.Since(l.at) <= opts.Since) || (!opts.SinceTime.IsZero() && !l.at.Before(opts.SinceTime)) {
					keep = append(keep, l)
				}
			}
			lines = keep
		}
		if opts.TailLines > 0 && int64(len(lines)) > opts.TailLines {
			lines = lines[int64(len(lines))-opts.TailLines:]
		}
	}
	var b bytes.Buffer
	for _, l := range lines {
		if opts.Timestamps {
			b.WriteString(l.at.UTC().Format(time.RFC3339Nano) + " ")
		}
		b.WriteString(l.text)
	}
	return b.Bytes()
}

// Logs returns what AppendLogs added (opts as kubectl logs takes them; Previous is not
// kept and gives nothing). The Sandbox needs a pod (a *sandbox.NotReadyError otherwise,
// as with the Client). With Follow the stream goes on with new lines until ctx ends, the
// Sandbox stops running (its pod changes) or is removed.
func (f *Fake) Logs(ctx context.Context, name string, opts sandbox.LogOptions) (io.ReadCloser, error) {
	if opts.TailLines < 0 || opts.LimitBytes < 0 || opts.Since < 0 {
		return nil, fmt.Errorf("logs: TailLines, LimitBytes and Since must not be negative")
	}
	if opts.Since > 0 && !opts.SinceTime.IsZero() {
		return nil, fmt.Errorf("logs: Since and SinceTime are exclusive")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(OpLogs); err != nil {
		return nil, err
	}
	b, ok := f.boxes[name]
	if !ok {
		return nil, NotFound(name)
	}
	switch b.sb.Status.Phase {
	case v1alpha1.PhaseStopped, v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed:
		return nil, sandbox.NewNotReadyError(b.sb, "Running", "it has no pod to read logs from", nil)
	}
	if b.sb.Status.PodName == "" {
		return nil, sandbox.NewNotReadyError(b.sb, "Running", "it has no pod to read logs from", nil)
	}
	var lines []logLine
	if !opts.Previous {
		lines = b.logs
	}
	data := selectLogs(lines, opts, true)
	limit := func(p []byte, sent int64) []byte {
		if opts.LimitBytes > 0 && sent+int64(len(p)) > opts.LimitBytes {
			return p[:opts.LimitBytes-sent]
		}
		return p
	}
	if !opts.Follow || opts.Previous {
		return io.NopCloser(bytes.NewReader(limit(data, 0))), nil
	}
	pr, pw := io.Pipe()
	pod, uid, next := b.sb.Status.PodName, b.sb.UID, len(b.logs)
	go func() {
		sent := int64(0)
		for {
			p := limit(data, sent)
			if len(p) > 0 {
				if _, err := pw.Write(p); err != nil {
					return
				}
				sent += int64(len(p))
			}
			if opts.LimitBytes > 0 && sent >= opts.LimitBytes {
				pw.Close()
				return
			}
			f.mu.Lock()
			changed := f.changed
			b, ok := f.boxes[name]
			if !ok || b.sb.UID != uid || b.sb.Status.PodName != pod || !b.sb.IsRunning() {
				f.mu.Unlock()
				pw.Close()
				return
			}
			data = nil
			if len(b.logs) > next {
				data = selectLogs(b.logs[next:], opts, false)
				next = len(b.logs)
			}
			f.mu.Unlock()
			if len(data) > 0 {
				continue
			}
			select {
			case <-changed:
			case <-ctx.Done():
				pw.CloseWithError(ctx.Err())
				return
			}
		}
	}()
	return pr, nil
}

// ---- port-forward -----------------------------------------------------------------------

// PortHandler serves one forwarded connection to a port of the sandbox's container (the
// connection is closed after it returns).
type PortHandler func(conn net.Conn)

// HandlePort makes connections forwarded to remotePort (of any Sandbox) go to h (nil:
// nobody listens there).
func (f *Fake) HandlePort(remotePort int, h PortHandler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h == nil {
		delete(f.ports, remotePort)
	} else {
		f.ports[remotePort] = h
	}
}

// PortForward listens on 127.0.0.1:localPort (0: a free port) and hands each connection
// to the HandlePort handler of remotePort, until ctx ends; it returns the port bound. The
// Sandbox is started first and marked used while the forward lasts. As with the Client
// (client-go), a connection to a port nobody listens on ends the whole forward.
func (f *Fake) PortForward(ctx context.Context, name string, localPort, remotePort int) (int, error) {
	if localPort < 0 || localPort > 65535 || remotePort < 1 || remotePort > 65535 {
		return 0, fmt.Errorf("port-forward: ports out of range (local %d, remote %d)", localPort, remotePort)
	}
	f.mu.Lock()
	err := f.injected(OpPortForward)
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if _, err := f.EnsureRunning(ctx, name); err != nil {
		return 0, err
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", localPort))
	if err != nil {
		return 0, fmt.Errorf("port-forward: %w", err)
	}
	stopBeat := f.Heartbeat(context.WithoutCancel(ctx), name, nil)
	var once sync.Once
	end := func() { once.Do(func() { ln.Close(); stopBeat() }) }
	go func() {
		<-ctx.Done()
		end()
	}()
	go func() {
		defer end()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			h := f.ports[remotePort]
			f.mu.Unlock()
			if h == nil {
				conn.Close()
				return // as client-go: an error from the pod ends the forward
			}
			go func() {
				defer conn.Close()
				h(conn)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

// NotReadyError: the Sandbox did not become what a wait asked for. It carries the last
// state seen (phase, the Ready condition's reason and message) so the caller can tell a
// full cluster (CapacityExceeded) from a bad image (ImagePullBackOff) or a bad spec
// (InvalidSpec). Err is the cause: context.DeadlineExceeded / Canceled when the wait ran
// out, nil when the state itself is final (InvalidSpec, NameConflict, a finished one-shot,
// paused, being deleted).
type NotReadyError struct {
	Name    string
	Want    string // "Running", "Stopped"
	Phase   v1alpha1.Phase
	Reason  string
	Message string
	Why     string // what made the wait give up, in words
	Err     error
}

func (e *NotReadyError) Error() string {
	s := fmt.Sprintf("sandbox %q is not %s: %s (phase %s", e.Name, e.Want, e.Why, orNone(string(e.Phase)))
	if e.Reason != "" {
		s += ", reason " + e.Reason
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s + ")"
}

func (e *NotReadyError) Unwrap() error { return e.Err }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func notReady(sb *v1alpha1.Sandbox, want, why string, err error) *NotReadyError {
	e := &NotReadyError{Name: sb.Name, Want: want, Phase: sb.Status.Phase, Why: why, Err: err}
	if c := sb.ReadyCondition(); c != nil {
		e.Reason, e.Message = c.Reason, c.Message
	}
	return e
}

// RunningState is the test WaitReady applies to each state it sees: true when sb runs
// (Running with a pod, not paused, not being deleted); a *NotReadyError when it never
// will without a change by someone (InvalidSpec, NameConflict, a finished one-shot,
// paused; being deleted wraps ErrDeleted); false and nil while it may still start.
func RunningState(sb *v1alpha1.Sandbox) (bool, error) { return runningState(sb) }

// StoppedState is WaitStopped's test: true when nothing runs (Stopped, or a finished
// one-shot); a *NotReadyError when sb runs and is not paused.
func StoppedState(sb *v1alpha1.Sandbox) (bool, error) { return stoppedState(sb) }

// NewNotReadyError describes sb as a wait that wanted phase want gives up on it: why in
// words, err the cause (may be nil). For fakes and wrappers that wait like a Client.
func NewNotReadyError(sb *v1alpha1.Sandbox, want, why string, err error) *NotReadyError {
	return notReady(sb, want, why, err)
}

// runningState: done when sb runs; a non-nil error when it never will without a change
// by someone (a final state).
func runningState(sb *v1alpha1.Sandbox) (bool, error) {
	if sb.DeletionTimestamp != nil {
		return false, notReady(sb, "Running", "it is being deleted", ErrDeleted)
	}
	if sb.IsRunning() {
		return true, nil
	}
	if sb.Spec.Paused {
		return false, notReady(sb, "Running", "it is paused (Start it)", nil)
	}
	switch sb.Status.Phase {
	case v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed:
		return false, notReady(sb, "Running", "its one-shot run has finished", nil)
	}
	if c := sb.ReadyCondition(); c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == v1alpha1.ReasonInvalidSpec || c.Reason == v1alpha1.ReasonNameConflict) {
		return false, notReady(sb, "Running", "it cannot start", nil)
	}
	return false, nil
}

// stoppedState: done when sb is Stopped (or gone: nothing runs).
func stoppedState(sb *v1alpha1.Sandbox) (bool, error) {
	if sb.Status.Phase == v1alpha1.PhaseStopped || sb.Status.Phase == v1alpha1.PhaseSucceeded ||
		sb.Status.Phase == v1alpha1.PhaseFailed {
		return true, nil
	}
	if !sb.Spec.Paused && sb.DeletionTimestamp == nil && sb.Status.Phase == v1alpha1.PhaseRunning {
		return false, notReady(sb, "Stopped", "it is running and not paused (Stop it)", nil)
	}
	return false, nil
}

// WaitReady waits, watching the Sandbox, until it is Running with a pod (not paused, not
// being deleted) and returns it. It gives up with a *NotReadyError at once on a final
// state (InvalidSpec, NameConflict, a finished one-shot, paused, deleted) and when ctx
// ends; the error names the phase and the Ready condition's reason and message.
func (c *Client) WaitReady(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	return c.waitFor(ctx, name, "", "Running", runningState)
}

// WaitStopped waits until the Sandbox is Stopped (or finished, or gone).
func (c *Client) WaitStopped(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	sb, err := c.waitFor(ctx, name, "", "Stopped", stoppedState)
	if errors.Is(err, ErrDeleted) {
		return nil, nil
	}
	return sb, err
}

// WaitGone waits until the Sandbox called name (with uid, when not empty) no longer
// exists.
func (c *Client) WaitGone(ctx context.Context, name string, uid types.UID) error {
	_, err := c.waitFor(ctx, name, uid, "deleted", func(*v1alpha1.Sandbox) (bool, error) { return false, nil })
	if errors.Is(err, ErrDeleted) {
		return nil
	}
	return err
}

// waitFor GETs the Sandbox, then watches it (field selector metadata.name) from that
// resourceVersion until state says done or fails; a closed or expired watch starts over
// with a GET. A deletion (or a different uid when uid is set) ends it with ErrDeleted.
func (c *Client) waitFor(ctx context.Context, name string, uid types.UID, want string,
	state func(*v1alpha1.Sandbox) (bool, error)) (*v1alpha1.Sandbox, error) {
	var last *v1alpha1.Sandbox
	check := func(sb *v1alpha1.Sandbox) (bool, *v1alpha1.Sandbox, error) {
		if uid != "" && sb.UID != uid {
			return true, nil, fmt.Errorf("sandbox %q: %w", name, ErrDeleted)
		}
		last = sb
		done, err := state(sb)
		return done || err != nil, sb, err
	}
	for {
		sb, err := c.Get(ctx, name)
		if IsNotFound(err) {
			return nil, fmt.Errorf("sandbox %q: %w", name, ErrDeleted)
		}
		if err != nil {
			return nil, c.waitErr(ctx, last, want, err)
		}
		if stop, out, err := check(sb); stop {
			return out, err
		}
		timeout := int64(300)
		w, err := c.sandboxes.Get().Namespace(c.namespace).Resource("sandboxes").
			VersionedParams(&metav1.ListOptions{
				FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
				ResourceVersion: sb.ResourceVersion,
				TimeoutSeconds:  &timeout,
				Watch:           true,
			}, c.params).Watch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, c.waitErr(ctx, last, want, err)
			}
			if err := sleepCtx(ctx, time.Second); err != nil {
				return nil, c.waitErr(ctx, last, want, err)
			}
			continue
		}
		stop, out, err := c.drain(ctx, w, check)
		w.Stop()
		if stop {
			return out, err
		}
		if ctx.Err() != nil {
			return nil, c.waitErr(ctx, last, want, ctx.Err())
		}
	}
}

// drain reads watch events until check stops, the Sandbox is deleted, or the watch ends.
func (c *Client) drain(ctx context.Context, w watch.Interface,
	check func(*v1alpha1.Sandbox) (bool, *v1alpha1.Sandbox, error)) (bool, *v1alpha1.Sandbox, error) {
	for {
		select {
		case <-ctx.Done():
			return false, nil, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil, nil
			}
			sb, isSandbox := ev.Object.(*v1alpha1.Sandbox)
			switch ev.Type {
			case watch.Added, watch.Modified:
				if isSandbox {
					if stop, out, err := check(sb); stop {
						return true, out, err
					}
				}
			case watch.Deleted:
				if isSandbox {
					return true, nil, fmt.Errorf("sandbox %q: %w", sb.Name, ErrDeleted)
				}
			case watch.Error:
				return false, nil, nil // 410 Gone and the like: GET and watch again
			}
		}
	}
}

// waitErr is the error of a wait that ran out (ctx) or failed (err).
func (c *Client) waitErr(ctx context.Context, last *v1alpha1.Sandbox, want string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if last == nil {
		return err
	}
	why := "the wait failed: " + err.Error()
	if ctx.Err() != nil {
		why = "gave up waiting"
	}
	return notReady(last, want, why, err)
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

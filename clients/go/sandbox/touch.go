package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

// Keeping last-used-at fresh. The controller stops or removes a sandbox whose
// last-used-at (or start time) is older than its idle timeout, and may reclaim one idle
// for its class's reclaim window, so a client marks it used whenever it uses it and,
// during long work, on a heartbeat. The interval follows the policy the controller
// publishes in status (IdleTimeout, ReclaimAfter), re-read from every Sandbox the Client
// reads or writes (each touch's answer among them). Writes are throttled: within one
// touch interval of the newest use this Client knows of (its own writes, and the
// annotation of every Sandbox it has read), no write is made.

const (
	touchMin = time.Second
	touchMax = time.Minute
)

// TouchInterval is how often a sandbox that stops counting as used after window is
// marked used while it is in use: a third of it, between 1 s and 60 s (60 s when window
// is unknown, <= 0). The same rule as the CLI's cli_touch_interval_ms.
func TouchInterval(window time.Duration) time.Duration {
	if window <= 0 {
		return touchMax
	}
	d := window / 3
	if d < touchMin {
		return touchMin
	}
	if d > touchMax {
		return touchMax
	}
	return d
}

// touchState is what the Client knows of one Sandbox's use.
type touchState struct {
	last     time.Time     // newest known last-used-at
	interval time.Duration // its touch interval
}

// positiveDuration parses a duration of the API ("5s", "1h30m"); 0 when empty, junk or
// not positive.
func positiveDuration(s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// KeepAliveWindow is how long sb may go unused before the controller may act on it: the
// shorter of its effective idle timeout and reclaim window (Status.IdleTimeout,
// Status.ReclaimAfter), with Spec.IdleTimeout in place of Status.IdleTimeout when the
// controller publishes none (an older one). 0 when nothing is known. The same rule as
// the CLI's cli_keepalive_window_ms.
func KeepAliveWindow(sb *v1alpha1.Sandbox) time.Duration {
	if sb == nil {
		return 0
	}
	idle := positiveDuration(sb.Status.IdleTimeout)
	if idle == 0 {
		idle = positiveDuration(sb.Spec.IdleTimeout)
	}
	reclaim := positiveDuration(sb.Status.ReclaimAfter)
	switch {
	case idle == 0:
		return reclaim
	case reclaim == 0 || idle < reclaim:
		return idle
	default:
		return reclaim
	}
}

// intervalOf is the touch interval of sb: TouchInterval of its KeepAliveWindow.
func intervalOf(sb *v1alpha1.Sandbox) time.Duration {
	return TouchInterval(KeepAliveWindow(sb))
}

// lastUsedOf is the Sandbox's stored last-used-at annotation (zero when absent or bad).
func lastUsedOf(sb *v1alpha1.Sandbox) time.Time {
	v := sb.Annotations[v1alpha1.AnnotationLastUsedAt]
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

// noteUsed records what sb says (its annotation and interval) and, when at is newer,
// that we marked it used at at.
func (c *Client) noteUsed(sb *v1alpha1.Sandbox, at time.Time) {
	if sb == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.touched[sb.Name]
	if t := lastUsedOf(sb); t.After(st.last) {
		st.last = t
	}
	if at.After(st.last) {
		st.last = at
	}
	st.interval = intervalOf(sb)
	c.touched[sb.Name] = st
}

// Touch sets last-used-at to now, unconditionally (one merge patch).
func (c *Client) Touch(ctx context.Context, name string) error {
	now := c.Now()
	sb, err := c.patch(ctx, name, map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{v1alpha1.AnnotationLastUsedAt: formatTime(now)}},
	})
	if err != nil {
		return err
	}
	c.noteUsed(sb, now)
	return nil
}

// MarkUsed sets last-used-at to now unless the newest use this Client knows of is
// younger than the sandbox's touch interval; it reports whether it wrote.
func (c *Client) MarkUsed(ctx context.Context, name string) (bool, error) {
	now := c.Now()
	c.mu.Lock()
	st, known := c.touched[name]
	fresh := known && now.Sub(st.last) < st.interval
	c.mu.Unlock()
	if fresh {
		return false, nil
	}
	return true, c.Touch(ctx, name)
}

// Heartbeat marks the sandbox used now (throttled, see MarkUsed) and then once per touch
// interval until stop is called or ctx ends: for long work that does not go through Exec
// (which runs its own). Write errors are passed to onError when it is not nil (the
// heartbeat goes on). stop waits for the heartbeat to end.
func (c *Client) Heartbeat(ctx context.Context, name string, onError func(error)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if _, err := c.MarkUsed(ctx, name); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
			c.mu.Lock()
			every := c.touched[name].interval
			c.mu.Unlock()
			if every <= 0 {
				every = touchMin // not known yet (the write failed): retry soon
			}
			t := time.NewTimer(every)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

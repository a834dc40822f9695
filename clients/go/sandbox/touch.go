package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

// Keeping last-used-at fresh. The controller stops or removes a sandbox whose
// last-used-at (or start time) is older than its idle timeout, so a client marks it used
// whenever it uses it and, during long work, on a heartbeat. Writes are throttled: within
// one touch interval of the newest use this Client knows of (its own writes, and the
// annotation of every Sandbox it has read), no write is made.

const (
	touchMin = time.Second
	touchMax = time.Minute
)

// TouchInterval is how often a sandbox with idle timeout idle is marked used while it is
// in use: a third of it, between 1 s and 60 s (60 s when idle is unknown, <= 0). The
// same rule as the CLI's cli_touch_interval_ms.
func TouchInterval(idle time.Duration) time.Duration {
	if idle <= 0 {
		return touchMax
	}
	d := idle / 3
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

// intervalOf is the touch interval of sb (from spec.idleTimeout; 60 s when unset or
// unparsable: the controller's default of 30m gives that too).
func intervalOf(sb *v1alpha1.Sandbox) time.Duration {
	if sb == nil || sb.Spec.IdleTimeout == "" {
		return touchMax
	}
	d, err := time.ParseDuration(sb.Spec.IdleTimeout)
	if err != nil {
		return touchMax
	}
	return TouchInterval(d)
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

package sandbox

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

// LogOptions selects what Logs returns (kubectl logs' flags).
type LogOptions struct {
	// Follow streams new output until the container ends or ctx ends (-f).
	Follow bool
	// TailLines returns only the last N lines (--tail N); 0 returns all of them.
	TailLines int64
	// Since returns only lines newer than this (--since), SinceTime only lines from then
	// on (--since-time); at most one of them.
	Since     time.Duration
	SinceTime time.Time
	// Timestamps prefixes each line with its RFC 3339 time (--timestamps).
	Timestamps bool
	// Previous returns the output of the container's previous run, after it restarted
	// (--previous).
	Previous bool
	// LimitBytes stops after this many bytes (--limit-bytes); 0: no limit.
	LimitBytes int64
}

// podLogOptions is opts in the API's terms, for the sandbox container.
func podLogOptions(opts LogOptions) (*corev1.PodLogOptions, error) {
	if opts.TailLines < 0 || opts.LimitBytes < 0 || opts.Since < 0 {
		return nil, fmt.Errorf("logs: TailLines, LimitBytes and Since must not be negative")
	}
	if opts.Since > 0 && !opts.SinceTime.IsZero() {
		return nil, fmt.Errorf("logs: Since and SinceTime are exclusive")
	}
	lo := &corev1.PodLogOptions{
		Container:  v1alpha1.ContainerName,
		Follow:     opts.Follow,
		Timestamps: opts.Timestamps,
		Previous:   opts.Previous,
	}
	if opts.TailLines > 0 {
		lo.TailLines = &opts.TailLines
	}
	if opts.LimitBytes > 0 {
		lo.LimitBytes = &opts.LimitBytes
	}
	if opts.Since > 0 {
		secs := int64((opts.Since + time.Second - 1) / time.Second)
		lo.SinceSeconds = &secs
	}
	if !opts.SinceTime.IsZero() {
		t := metav1.NewTime(opts.SinceTime)
		lo.SinceTime = &t
	}
	return lo, nil
}

// hasPod: sb's status names a pod that may exist (the controller keeps the name of a
// stopped sandbox's pod in status.podName, the one it would create again).
func hasPod(sb *v1alpha1.Sandbox) bool {
	switch sb.Status.Phase {
	case v1alpha1.PhaseStopped, v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed:
		return false
	}
	return sb.Status.PodName != ""
}

// Logs streams the output of the sandbox's container (its main process: the image's
// command, or a one-shot's spec.run while its pod exists) from the API server's pods/log,
// as kubectl logs does. The caller reads and closes the stream; with Follow it ends when
// the container ends or ctx ends. The Sandbox is not started: one without a pod (stopped,
// paused, pending, a finished one-shot whose pod is gone — its result is in status.run)
// gives a *NotReadyError. Reading logs does not count as use (last-used-at is not set).
func (c *Client) Logs(ctx context.Context, name string, opts LogOptions) (io.ReadCloser, error) {
	lo, err := podLogOptions(opts)
	if err != nil {
		return nil, err
	}
	sb, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	c.noteUsed(sb, time.Time{})
	if !hasPod(sb) {
		return nil, notReady(sb, "Running", "it has no pod to read logs from", nil)
	}
	rc, err := c.core.Get().Namespace(c.namespace).Resource("pods").Name(sb.Status.PodName).SubResource("log").
		VersionedParams(lo, c.params).Stream(ctx)
	if apierrors.IsNotFound(err) { // the pod went between the GET and now
		return nil, notReady(sb, "Running", "its pod is gone", err)
	}
	if err != nil {
		return nil, fmt.Errorf("logs of sandbox %q: %w", name, err)
	}
	return rc, nil
}

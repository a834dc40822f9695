package yaovolume

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

// The stopped-sandbox policy (PolicyHelper).
//
// A stopped or paused Sandbox has no pod; its workspace claim is kept. Waking it for a
// file-browser click would start the user's whole environment (and, for a long-running
// one, undo its idle stop), so instead the operation runs in a helper pod:
//
//   - named yao-vol-<Sandbox uid> (one per Sandbox: creating it is the lock; a second
//     client finds it and shares it: one pod, so never two writers on the claim),
//     labelled app.kubernetes.io/component=volume-helper and
//     sandbox.yaoapps.com/volume-helper-for=<Sandbox name>, owned (not controlled) by the
//     Sandbox so it goes with it, without the controller's managed-by label (the
//     controller neither adopts nor counts it);
//   - restricted: non-root (uid, gid and fsGroup 1000 like the sandbox), no service
//     account token, read-only root filesystem, all capabilities dropped, no privilege
//     escalation, RuntimeDefault seccomp, small resource limits, and bounded by
//     activeDeadlineSeconds (Options.HelperDeadline): even a client that died leaves no
//     pod holding the claim past it;
//   - mounting only the claim (at the sandbox's mount path) and an emptyDir /tmp; the
//     scheduler places it where the claim's volume can be mounted (a local volume's
//     node affinity, a ReadWriteOnce attachment), preferring the node the sandbox last
//     ran on;
//   - made only when the Sandbox is Stopped and its pod is gone (a Sandbox starting or
//     stopping answers ErrSandboxBusy);
//   - watched: when the Sandbox is started meanwhile (spec.paused cleared, last-used-at
//     changed, a phase other than Stopped), the helper is deleted
//     at once (grace 0) and the operations under way fail with ErrSandboxStarted. The
//     controller, for its part, creates no sandbox pod while a helper of the Sandbox has
//     not ended (Ready=False, reason WorkspaceBusy), so the two never share the claim.
//   - removed Options.HelperIdle after its last operation, and by Close.
//
// It needs pods create and delete in the namespace beyond the yao-sandbox-editor role.

// helperComponent and the label/annotation keys of helper pods.
const (
	helperComponent        = "volume-helper"
	LabelHelperFor         = "sandbox.yaoapps.com/volume-helper-for"
	AnnotationHelperFor    = "sandbox.yaoapps.com/volume-helper-for"
	helperContainer        = "volume"
	helperMarkerEnv        = "YAO_VOLUME_OP"
	helperKillGraceTimeout = 10 * time.Second
)

// HelperPodName is the helper pod's name for a Sandbox uid.
func HelperPodName(uid string) string { return "yao-vol-" + uid }

type helper struct {
	sbName, pod, root string
	created           bool
	refs              int
	idle              *time.Timer
	ctx               context.Context
	cancel            context.CancelFunc
	revoked           error
}

var errHelperGone = errors.New("the helper pod was removed")

func (c *Client) lockFor(name string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.locks[name]
	if l == nil {
		l = &sync.Mutex{}
		c.locks[name] = l
	}
	return l
}

// helperRunner returns a runner in the Sandbox's helper, making the helper when needed.
func (c *Client) helperRunner(ctx context.Context, sb *v1alpha1.Sandbox) (runner, func(), error) {
	l := c.lockFor(sb.Name)
	l.Lock()
	defer l.Unlock()
	c.mu.Lock()
	h := c.helpers[sb.Name]
	if h != nil && h.revoked == nil {
		h.refs++
		if h.idle != nil {
			h.idle.Stop()
			h.idle = nil
		}
		c.mu.Unlock()
		return &podRunner{c: c, h: h}, func() { c.release(h) }, nil
	}
	c.mu.Unlock()
	h, err := c.startHelper(ctx, sb)
	if err != nil {
		return nil, nil, err
	}
	return &podRunner{c: c, h: h}, func() { c.release(h) }, nil
}

func (c *Client) release(h *helper) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h.refs--
	if h.refs == 0 && h.revoked == nil {
		h.idle = time.AfterFunc(c.opts.HelperIdle, func() {
			c.mu.Lock()
			idle := h.refs == 0 && h.revoked == nil
			c.mu.Unlock()
			if idle {
				_ = c.dropHelper(h, errHelperGone)
			}
		})
	}
}

// dropHelper forgets h, ends its operations and deletes its pod when this client made it.
func (c *Client) dropHelper(h *helper, why error) error {
	if why == nil {
		why = errHelperGone
	}
	c.mu.Lock()
	if c.helpers[h.sbName] == h {
		delete(c.helpers, h.sbName)
	}
	if h.revoked == nil {
		h.revoked = why
	}
	if h.idle != nil {
		h.idle.Stop()
	}
	c.mu.Unlock()
	h.cancel()
	if !h.created && !errors.Is(why, ErrSandboxStarted) {
		return nil // another client's: it removes it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	zero := int64(0)
	err := c.deletePod(ctx, h.pod, &zero)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// stillStopped: the Sandbox is as it was when the helper was made (nobody started it).
func stillStopped(now, then *v1alpha1.Sandbox) bool {
	return now.DeletionTimestamp == nil && now.UID == then.UID && now.Status.Phase == v1alpha1.PhaseStopped &&
		now.Spec.Paused == then.Spec.Paused &&
		now.Annotations[v1alpha1.AnnotationLastUsedAt] == then.Annotations[v1alpha1.AnnotationLastUsedAt]
}

func (c *Client) helperPod(sb *v1alpha1.Sandbox, image string) *corev1.Pod {
	no, yes := false, true
	uid := c.opts.RunAsUser
	deadline := int64(c.opts.HelperDeadline / time.Second)
	grace := int64(0)
	change := corev1.FSGroupChangeOnRootMismatch
	tmpLimit := resource.MustParse("64Mi")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: HelperPodName(string(sb.UID)),
			Labels: map[string]string{
				"app.kubernetes.io/name":      "yao-sandbox",
				"app.kubernetes.io/component": helperComponent,
				LabelHelperFor:                sandbox.LabelValue(sb.Name),
			},
			Annotations: map[string]string{AnnotationHelperFor: sb.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Sandbox",
				Name: sb.Name, UID: sb.UID}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
				FSGroupChangePolicy: &change, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: helperContainer, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sleep", strconv.FormatInt(deadline+60, 10)},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Privileged: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "workspace", MountPath: sb.MountPath()}, {Name: "tmp", MountPath: "/tmp"}},
			}},
			Volumes: []corev1.Volume{
				{Name: "workspace", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: sb.Status.WorkspaceClaim}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &tmpLimit}}},
			},
		},
	}
	if sb.Status.NodeName != "" {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{sb.Status.NodeName}}}}}},
		}}
	}
	return pod
}

// startHelper makes (or joins) the Sandbox's helper and waits until it runs.
func (c *Client) startHelper(ctx context.Context, sb *v1alpha1.Sandbox) (*helper, error) {
	if sb.Status.Phase != v1alpha1.PhaseStopped {
		return nil, fmt.Errorf("%w (phase %s)", ErrSandboxBusy, sb.Status.Phase)
	}
	if sb.Status.WorkspaceClaim == "" {
		return nil, fmt.Errorf("%w: the sandbox has no workspace claim yet", ErrSandboxBusy)
	}
	if pod, err := sandbox.PodName(sb.Spec.UserID, sb.Spec.ChatID); err == nil {
		if _, err := c.getPod(ctx, pod); err == nil {
			return nil, fmt.Errorf("%w: its pod %s is still there", ErrSandboxBusy, pod)
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	image := c.opts.HelperImage
	if image == "" {
		image = sb.Spec.Image
	}
	if image == "" {
		return nil, errors.New("yaovolume: no image for the helper pod: set Options.HelperImage (the Sandbox names none)")
	}
	want := c.helperPod(sb, image)
	created := true
	pod, err := c.createPod(ctx, want)
	for attempt := 0; err != nil && apierrors.IsAlreadyExists(err) && attempt < 3; attempt++ {
		pod, err = c.getPod(ctx, want.Name)
		if err != nil {
			break
		}
		if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			created = false // another client's live helper: share it
			break
		}
		// a finished or dying helper: wait it out and make a new one
		zero := int64(0)
		_ = c.deletePod(ctx, want.Name, &zero)
		if err = c.waitPodGone(ctx, want.Name); err != nil {
			break
		}
		pod, err = c.createPod(ctx, want)
	}
	if err != nil {
		return nil, fmt.Errorf("helper pod for the stopped sandbox %s: %w", sb.Name, err)
	}
	hctx, hcancel := context.WithCancel(context.Background())
	h := &helper{sbName: sb.Name, pod: pod.Name, root: sb.MountPath(), created: created, refs: 1, ctx: hctx, cancel: hcancel}
	fail := func(err error) (*helper, error) {
		_ = c.dropHelper(h, err)
		return nil, err
	}
	if err := c.waitPodReady(ctx, pod.Name); err != nil {
		return fail(fmt.Errorf("helper pod %s: %w", pod.Name, err))
	}
	// Nobody started the Sandbox meanwhile? From here on a watch keeps checking.
	now, err := c.sb.Get(ctx, sb.Name)
	if err != nil {
		return fail(err)
	}
	if !stillStopped(now, sb) {
		return fail(ErrSandboxStarted)
	}
	c.mu.Lock()
	c.helpers[sb.Name] = h
	c.mu.Unlock()
	go c.guard(h, sb, now.ResourceVersion)
	return h, nil
}

var sandboxGVR = schema.GroupVersionResource{Group: v1alpha1.SchemeGroupVersion.Group, Version: v1alpha1.SchemeGroupVersion.Version, Resource: v1alpha1.Resource}

// guard watches the Sandbox while the helper lives and removes the helper as soon as the
// Sandbox is started.
func (c *Client) guard(h *helper, then *v1alpha1.Sandbox, rv string) {
	dyn, err := dynamic.NewForConfig(c.cfg)
	if err != nil {
		_ = c.dropHelper(h, fmt.Errorf("%w: cannot watch the sandbox: %v", ErrSandboxStarted, err))
		return
	}
	res := dyn.Resource(sandboxGVR).Namespace(c.ns)
	for h.ctx.Err() == nil {
		w, err := res.Watch(h.ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", then.Name).String(),
			ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if h.ctx.Err() != nil {
				return
			}
			time.Sleep(500 * time.Millisecond)
			now, gerr := c.sb.Get(h.ctx, then.Name)
			if gerr != nil && h.ctx.Err() == nil {
				_ = c.dropHelper(h, fmt.Errorf("%w: %v", ErrSandboxStarted, gerr))
				return
			}
			if gerr == nil {
				if !stillStopped(now, then) {
					_ = c.dropHelper(h, ErrSandboxStarted)
					return
				}
				rv = now.ResourceVersion
			}
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				w.Stop()
				_ = c.dropHelper(h, ErrSandboxStarted)
				return
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			rv = u.GetResourceVersion()
			if ev.Type == watch.Bookmark {
				continue
			}
			now := &v1alpha1.Sandbox{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, now) == nil && !stillStopped(now, then) {
				w.Stop()
				_ = c.dropHelper(h, ErrSandboxStarted)
				return
			}
		}
		rv = "" // closed: start over from a fresh read
		if now, err := c.sb.Get(h.ctx, then.Name); err == nil {
			if !stillStopped(now, then) {
				_ = c.dropHelper(h, ErrSandboxStarted)
				return
			}
			rv = now.ResourceVersion
		}
	}
}

func (c *Client) waitPodReady(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.HelperStartTimeout)
	defer cancel()
	for {
		pod, err := c.getPod(ctx, name)
		if err != nil {
			return err
		}
		switch pod.Status.Phase {
		case corev1.PodRunning:
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.Name == helperContainer && cs.Ready {
					return nil
				}
			}
		case corev1.PodSucceeded, corev1.PodFailed:
			return fmt.Errorf("it ended (%s: %s)", pod.Status.Reason, pod.Status.Message)
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "CreateContainerConfigError" || w.Reason == "InvalidImageName") {
				return fmt.Errorf("%s: %s", w.Reason, w.Message)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not running after %v: %w", c.opts.HelperStartTimeout, ctx.Err())
		case <-time.After(150 * time.Millisecond):
		}
	}
}

func (c *Client) waitPodGone(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		_, err := c.getPod(ctx, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// podRunner runs the script in a helper pod.
type podRunner struct {
	c *Client
	h *helper
}

func (p *podRunner) Root() string { return p.h.root }

// helperKillScript ends the processes whose environment holds the marker "$1".
const helperKillScript = `for f in $(grep -lszxF -- "$1" /proc/[0-9]*/environ); do p=${f#/proc/}; kill -KILL "${p%/environ}" 2>/dev/null; done; exit 0`

func (p *podRunner) Run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	p.c.mu.Lock()
	revoked := p.h.revoked
	p.c.mu.Unlock()
	if revoked != nil {
		return revoked
	}
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.h.ctx, cancel)
	defer stop()
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	marker := helperMarkerEnv + "=" + hex.EncodeToString(id[:])
	argv := append([]string{"env", marker, "sh", "-c", volumeScript, "yaovol"}, args...)
	errb := &boundedBuffer{max: 16 << 10}
	code, err := p.c.execPod(octx, p.h.pod, argv, stdin, stdout, errb)
	if err != nil {
		if p.h.ctx.Err() != nil {
			p.c.mu.Lock()
			revoked = p.h.revoked
			p.c.mu.Unlock()
			return revoked
		}
		if ctx.Err() != nil {
			kctx, kcancel := context.WithTimeout(context.Background(), helperKillGraceTimeout)
			_, kerr := p.c.execPod(kctx, p.h.pod, []string{"sh", "-c", helperKillScript, "kill", marker}, nil, nil, nil)
			kcancel()
			if kerr != nil {
				return fmt.Errorf("%w; the command may still run in the helper pod: %v", ctx.Err(), kerr)
			}
			return ctx.Err()
		}
		return err
	}
	if code != 0 {
		return remoteError(code, errb.Bytes())
	}
	return nil
}

// execPod runs argv in a helper pod's container (WebSocket, SPDY fallback) and returns
// its exit code.
func (c *Client) execPod(ctx context.Context, pod string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	req := c.core.Post().Namespace(c.ns).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: helperContainer, Command: argv, Stdin: stdin != nil, Stdout: true, Stderr: true},
			c.params)
	ws, err := remotecommand.NewWebSocketExecutor(c.cfg, "GET", req.URL().String())
	if err != nil {
		return -1, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.cfg, "POST", req.URL())
	if err != nil {
		return -1, err
	}
	exe, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return -1, err
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	err = exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
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

func (c *Client) getPod(ctx context.Context, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	if err := c.core.Get().Namespace(c.ns).Resource("pods").Name(name).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Client) createPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	if err := c.core.Post().Namespace(c.ns).Resource("pods").Body(pod).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Client) deletePod(ctx context.Context, name string, grace *int64) error {
	return c.core.Delete().Namespace(c.ns).Resource("pods").Name(name).
		Body(&metav1.DeleteOptions{GracePeriodSeconds: grace}).Do(ctx).Error()
}

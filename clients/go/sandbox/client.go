// Package sandbox is the Go client of yao-sandbox: it finds or creates the Sandbox of a
// (user, chat), waits until it runs, runs commands in it (WebSocket exec with an SPDY
// fallback), keeps it marked as used while work goes on, and reads and writes its files,
// with the same rules as the yao-sandbox CLI (cli/main.c):
//
//   - the Sandbox of (user, chat) is named PodName(user, chat), the name of its pod;
//   - a stopped or paused Sandbox is started on use (spec.paused cleared, the
//     sandbox.yaoapps.com/last-used-at annotation set to now), then waited for;
//   - every use refreshes last-used-at, at most once per touch interval (a third of the
//     shorter of the effective idle timeout and reclaim window the controller publishes
//     in status, between 1 s and 60 s; see KeepAliveWindow);
//   - file helpers run POSIX tools (sh, cat, stat, mkdir, rm) in the container over exec,
//     so they work with GNU coreutils and busybox alike.
//
// Every write to a Sandbox is a JSON merge patch of the fields it changes (never a PUT of
// a whole object, which would drop status fields these types do not know).
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

// Client talks to Sandboxes of one namespace. It is safe for concurrent use.
type Client struct {
	config    *rest.Config
	sandboxes rest.Interface // sandbox.yaoapps.com/v1alpha1
	core      rest.Interface // v1, for pods/exec and pods/portforward
	params    runtime.ParameterCodec
	namespace string

	// Now is the clock behind last-used-at (tests may replace it).
	Now func() time.Time
	// StartTimeout bounds how long a use of a stopped sandbox waits for it to run
	// (default 2 minutes; the caller's context may end it sooner).
	StartTimeout time.Duration

	mu      sync.Mutex
	touched map[string]touchState // by Sandbox name
}

// Options tunes New.
type Options struct {
	// Namespace of the Sandboxes; "default" when empty.
	Namespace string
}

// New returns a Client for the Sandboxes of opts.Namespace, with config's credentials.
func New(config *rest.Config, opts Options) (*Client, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(scheme)

	sc := rest.CopyConfig(config)
	sc.GroupVersion = &v1alpha1.SchemeGroupVersion
	sc.APIPath = "/apis"
	sc.NegotiatedSerializer = codecs.WithoutConversion()
	if sc.UserAgent == "" {
		sc.UserAgent = "yao-sandbox-go/" + rest.DefaultKubernetesUserAgent()
	}
	sandboxes, err := rest.RESTClientFor(sc)
	if err != nil {
		return nil, fmt.Errorf("sandbox client: %w", err)
	}
	cc := rest.CopyConfig(sc)
	cc.GroupVersion = &corev1.SchemeGroupVersion
	cc.APIPath = "/api"
	core, err := rest.RESTClientFor(cc)
	if err != nil {
		return nil, fmt.Errorf("core client: %w", err)
	}
	ns := opts.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &Client{
		config: sc, sandboxes: sandboxes, core: core,
		params:       runtime.NewParameterCodec(scheme),
		namespace:    ns,
		Now:          time.Now,
		StartTimeout: 2 * time.Minute,
		touched:      map[string]touchState{},
	}, nil
}

// NewFromKubeconfig loads the configuration as kubectl does ($KUBECONFIG, ~/.kube/config,
// else the in-cluster service account; path, when set, wins) and returns a Client for
// namespace, or for the kubeconfig context's namespace when namespace is "".
func NewFromKubeconfig(path, namespace string) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := cfg.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if namespace == "" {
		if namespace, _, err = cfg.Namespace(); err != nil {
			return nil, fmt.Errorf("kubeconfig namespace: %w", err)
		}
	}
	return New(rc, Options{Namespace: namespace})
}

// Namespace is the namespace of the client's Sandboxes.
func (c *Client) Namespace() string { return c.namespace }

// Get returns the Sandbox called name (an apierrors NotFound error when there is none).
func (c *Client) Get(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	sb := &v1alpha1.Sandbox{}
	err := c.sandboxes.Get().Namespace(c.namespace).Resource(v1alpha1.Resource).Name(name).Do(ctx).Into(sb)
	if err != nil {
		return nil, err
	}
	return sb, nil
}

// GetFor returns the Sandbox of (user, chat), found by its canonical name.
func (c *Client) GetFor(ctx context.Context, user, chat string) (*v1alpha1.Sandbox, error) {
	name, err := PodName(user, chat)
	if err != nil {
		return nil, err
	}
	sb, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if sb.Spec.UserID != user || sb.Spec.ChatID != chat {
		return nil, &ConflictError{Name: name, UserID: user, ChatID: chat, OwnerUserID: sb.Spec.UserID, OwnerChatID: sb.Spec.ChatID}
	}
	return sb, nil
}

// ListOptions selects Sandboxes. UserID and ChatID are exact matches, evaluated by the
// API server (the CRD's selectableFields spec.userID and spec.chatID).
type ListOptions struct {
	UserID, ChatID string
	// LabelSelector in the usual syntax ("team=a,tier!=x"), optional.
	LabelSelector string
}

// List returns the Sandboxes of the namespace that match opts.
func (c *Client) List(ctx context.Context, opts ListOptions) ([]v1alpha1.Sandbox, error) {
	var sel []fields.Selector
	if opts.UserID != "" {
		sel = append(sel, fields.OneTermEqualSelector(v1alpha1.FieldUserID, opts.UserID))
	}
	if opts.ChatID != "" {
		sel = append(sel, fields.OneTermEqualSelector(v1alpha1.FieldChatID, opts.ChatID))
	}
	lo := &metav1.ListOptions{LabelSelector: opts.LabelSelector}
	if len(sel) > 0 {
		lo.FieldSelector = fields.AndSelectors(sel...).String()
	}
	list := &v1alpha1.SandboxList{}
	err := c.sandboxes.Get().Namespace(c.namespace).Resource(v1alpha1.Resource).
		VersionedParams(lo, c.params).Do(ctx).Into(list)
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ListByUser returns the user's Sandboxes (field selector spec.userID=user).
func (c *Client) ListByUser(ctx context.Context, user string) ([]v1alpha1.Sandbox, error) {
	if user == "" {
		return nil, ErrInvalidID
	}
	return c.List(ctx, ListOptions{UserID: user})
}

// Request describes the Sandbox GetOrCreate returns or creates.
type Request struct {
	UserID, ChatID string
	// Spec of a new Sandbox (its UserID and ChatID are set from the fields above). An
	// existing Sandbox is returned as it is, whatever its spec.
	Spec        v1alpha1.SandboxSpec
	Labels      map[string]string
	Annotations map[string]string
}

// GetOrCreate returns the Sandbox of (req.UserID, req.ChatID), creating it when there is
// none, and whether it created it. It is idempotent and race-free: the Sandbox has the
// canonical name PodName(user, chat), so of two concurrent calls the API server lets one
// create it and the other gets AlreadyExists and reads it. A Sandbox of that name that
// belongs to another (user, chat) gives a *ConflictError. A Sandbox that is being deleted
// (an idle session removed by the controller) is waited out and created anew.
func (c *Client) GetOrCreate(ctx context.Context, req Request) (*v1alpha1.Sandbox, bool, error) {
	name, err := PodName(req.UserID, req.ChatID)
	if err != nil {
		return nil, false, err
	}
	for attempt := 0; ; attempt++ {
		if attempt == 10 { // never seen: a GET 404 and a POST 409 ten times in a row
			return nil, false, fmt.Errorf("sandbox %q: created and deleted under us ten times in a row", name)
		}
		sb, err := c.Get(ctx, name)
		switch {
		case err == nil:
			if sb.Spec.UserID != req.UserID || sb.Spec.ChatID != req.ChatID {
				return nil, false, &ConflictError{Name: name, UserID: req.UserID, ChatID: req.ChatID,
					OwnerUserID: sb.Spec.UserID, OwnerChatID: sb.Spec.ChatID}
			}
			if sb.DeletionTimestamp == nil {
				return sb, false, nil
			}
			if err := c.WaitGone(ctx, name, sb.UID); err != nil {
				return nil, false, err
			}
			continue
		case !apierrors.IsNotFound(err):
			return nil, false, err
		}
		sb = &v1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: req.Labels, Annotations: req.Annotations},
			Spec:       req.Spec,
		}
		sb.Spec.UserID, sb.Spec.ChatID = req.UserID, req.ChatID
		out, err := c.Create(ctx, sb)
		if err == nil {
			return out, true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, false, err
		}
		// Someone else created it between our GET and POST: read it (loop).
	}
}

// Create creates sb as given (in the client's namespace) and returns what the API server
// stored. Prefer GetOrCreate, which names the Sandbox canonically.
func (c *Client) Create(ctx context.Context, sb *v1alpha1.Sandbox) (*v1alpha1.Sandbox, error) {
	in := sb.DeepCopy()
	in.Namespace = c.namespace
	out := &v1alpha1.Sandbox{}
	if err := c.sandboxes.Post().Namespace(c.namespace).Resource(v1alpha1.Resource).Body(in).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

// patch sends a JSON merge patch of v to the Sandbox.
func (c *Client) patch(ctx context.Context, name string, v any) (*v1alpha1.Sandbox, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := &v1alpha1.Sandbox{}
	err = c.sandboxes.Patch(types.MergePatchType).Namespace(c.namespace).Resource(v1alpha1.Resource).
		Name(name).Body(body).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Start clears spec.paused and marks the sandbox used (which also wakes a long-running
// sandbox stopped for being idle). It does not wait; see WaitReady.
func (c *Client) Start(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	now := c.Now()
	sb, err := c.patch(ctx, name, map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{v1alpha1.AnnotationLastUsedAt: formatTime(now)}},
		"spec":     map[string]any{"paused": false},
	})
	if err == nil {
		c.noteUsed(sb, now)
	}
	return sb, err
}

// Stop sets spec.paused: the controller deletes the pod and keeps the workspace. It does
// not wait; see WaitStopped.
func (c *Client) Stop(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	return c.patch(ctx, name, map[string]any{"spec": map[string]any{"paused": true}})
}

// Remove deletes the Sandbox (its pod and workspace go with it). Removing a Sandbox that
// is already gone is not an error. It does not wait; see WaitGone.
func (c *Client) Remove(ctx context.Context, name string) error {
	policy := metav1.DeletePropagationBackground
	err := c.sandboxes.Delete().Namespace(c.namespace).Resource(v1alpha1.Resource).Name(name).
		Body(&metav1.DeleteOptions{PropagationPolicy: &policy}).Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.mu.Lock()
	delete(c.touched, name)
	c.mu.Unlock()
	return nil
}

// ConflictError: the canonical name of (UserID, ChatID) is taken by a Sandbox of another
// pair (a hand-made Sandbox, or a 32-bit hash collision between two hashed names).
type ConflictError struct {
	Name                     string
	UserID, ChatID           string
	OwnerUserID, OwnerChatID string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("sandbox %q belongs to (user %q, chat %q), not to (user %q, chat %q)",
		e.Name, e.OwnerUserID, e.OwnerChatID, e.UserID, e.ChatID)
}

// IsNotFound is true when err says the Sandbox does not exist.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

// ErrDeleted is wrapped in the errors of waits that saw the Sandbox deleted (or being
// deleted): errors.Is(err, sandbox.ErrDeleted).
var ErrDeleted = errors.New("the sandbox was deleted")

// formatTime is RFC 3339 in UTC with second precision, as the controller writes it.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

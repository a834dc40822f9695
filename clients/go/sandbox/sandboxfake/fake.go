// Package sandboxfake is an in-memory sandbox.Interface for the tests of programs that
// use yao-sandbox's Go client: no cluster, no controller, no pods. A Fake keeps
// Sandboxes of one namespace in memory with the API server's rules (names unique, the
// same NotFound, AlreadyExists and Invalid errors as client-go's, resourceVersion and
// uid, status not written by clients), plays the controller's part well enough for
// clients (a Sandbox runs once created or started, stops when paused; its pod is named
// like it), and answers exec with results the test scripts. Files, logs and port
// forwards are simulated too. See the package example.
//
// By default the fake controller acts at once: Create and Start return the object as the
// API server stored it (no status yet, or the old one), and the Sandbox is Running right
// after, so the next Get, WaitReady or Exec sees it running. With Options.Manual the test
// moves Sandboxes itself (SetRunning, SetPending, SetStopped, Update), e.g. to test what
// a program does with a Sandbox stuck in ImagePullBackOff or stopped for idleness.
//
// What it does not simulate: the controller's capacity, idle and reclaim policies (set
// the states with SetPending and SetStopped), SandboxClasses, deletion that waits for
// finalizers (Remove deletes at once), symlinks in files, and the processes of a command
// (each exec runs a scripted result or the test's handler).
package sandboxfake

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

// Options tunes New.
type Options struct {
	// Namespace of the Sandboxes; "default" when empty.
	Namespace string
	// Manual leaves a Sandbox Pending when it is created or started, and running when it
	// is paused, until the test moves it (SetRunning, SetStopped, SetPending, Update).
	Manual bool
}

// Op names a group of calls for SetError.
type Op string

const (
	OpGet         Op = "get"         // Get, GetFor, and the reads of every other call
	OpList        Op = "list"        // List, ListByUser
	OpCreate      Op = "create"      // Create, GetOrCreate's creation
	OpUpdate      Op = "update"      // Start, Stop, Touch, MarkUsed (the merge patches)
	OpDelete      Op = "delete"      // Remove
	OpExec        Op = "exec"        // Exec and the file helpers (which run over exec)
	OpLogs        Op = "logs"        // Logs
	OpPortForward Op = "portforward" // PortForward
)

// Fake is an in-memory sandbox.Interface. Safe for concurrent use.
type Fake struct {
	// Now is the fake's clock: creation, start and last-used-at times (default time.Now).
	// Set it before use.
	Now func() time.Time
	// StartTimeout bounds how long a use of a stopped Sandbox waits for it to run, as
	// Client.StartTimeout (default 2 minutes; only Manual mode ever waits).
	StartTimeout time.Duration

	mu        sync.Mutex
	namespace string
	manual    bool
	boxes     map[string]*box
	changed   chan struct{} // closed and replaced at every change
	rv        int64
	uids      int
	errs      map[Op]error
	results   []scripted
	handler   ExecHandler
	calls     []*ExecCall
	ports     map[int]PortHandler
	touched   map[string]time.Time // the newest use this fake knows of, by name
}

// box is one Sandbox and what lives in its pod and workspace.
type box struct {
	sb    *v1alpha1.Sandbox
	files map[string]*node // by absolute path
	logs  []logLine
	held  bool // SetPending: the fake controller leaves it Pending until the test moves it
}

var _ sandbox.Interface = (*Fake)(nil)

// New returns an empty Fake.
func New(opts Options) *Fake {
	ns := opts.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &Fake{
		Now: time.Now, StartTimeout: 2 * time.Minute,
		namespace: ns, manual: opts.Manual,
		boxes: map[string]*box{}, changed: make(chan struct{}),
		errs: map[Op]error{}, ports: map[int]PortHandler{}, touched: map[string]time.Time{},
	}
}

var groupResource = schema.GroupResource{Group: v1alpha1.GroupName, Resource: v1alpha1.Resource}

// NotFound is the error the API server (and so the Client) gives for a missing Sandbox.
func NotFound(name string) error { return apierrors.NewNotFound(groupResource, name) }

// AlreadyExists is the error of creating a Sandbox whose name is taken.
func AlreadyExists(name string) error { return apierrors.NewAlreadyExists(groupResource, name) }

// SetError makes every later call of op fail with err (nil: succeed again), e.g.
// apierrors.NewForbidden or NewServiceUnavailable, to test a program's error paths.
func (f *Fake) SetError(op Op, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.errs, op)
	} else {
		f.errs[op] = err
	}
}

// injected is SetError's error for op (f.mu held).
func (f *Fake) injected(op Op) error { return f.errs[op] }

func (f *Fake) now() time.Time { return f.Now() }

// Namespace is the namespace of the fake's Sandboxes.
func (f *Fake) Namespace() string { return f.namespace }

// bump records a change of b: a new resourceVersion, and waiters wake (f.mu held).
func (f *Fake) bump(b *box) {
	f.rv++
	if b != nil {
		b.sb.ResourceVersion = strconv.FormatInt(f.rv, 10)
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// Add stores Sandboxes as given, status included (a fixture: "this user already has a
// stopped sandbox"). Missing namespace, uid, resourceVersion and creation time are
// filled in. A name that is taken is an AlreadyExists error.
func (f *Fake) Add(sbs ...*v1alpha1.Sandbox) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range sbs {
		if _, ok := f.boxes[in.Name]; ok {
			return AlreadyExists(in.Name)
		}
		if err := validName(in.Name); err != nil {
			return err
		}
		sb := in.DeepCopy()
		f.fillMeta(sb)
		b := &box{sb: sb}
		b.resetFiles()
		f.boxes[sb.Name] = b
		f.bump(b)
	}
	return nil
}

// fillMeta sets what the API server sets on a new object (f.mu held).
func (f *Fake) fillMeta(sb *v1alpha1.Sandbox) {
	sb.Namespace = f.namespace
	sb.APIVersion, sb.Kind = v1alpha1.SchemeGroupVersion.String(), "Sandbox"
	if sb.UID == "" {
		f.uids++
		sb.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", f.uids))
	}
	if sb.CreationTimestamp.IsZero() {
		sb.CreationTimestamp = metav1.NewTime(f.now().Truncate(time.Second))
	}
	if sb.Generation == 0 {
		sb.Generation = 1
	}
}

func isDeleted(err error) bool { return errors.Is(err, sandbox.ErrDeleted) }

func validName(name string) error {
	if name == "" {
		return apierrors.NewInvalid(schema.GroupKind{Group: v1alpha1.GroupName, Kind: "Sandbox"}, name, nil)
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("Sandbox %q is invalid: metadata.name: %s", name, strings.Join(msgs, "; ")))
	}
	return nil
}

// Get returns a copy of the Sandbox called name (NotFound when there is none).
func (f *Fake) Get(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.get(name)
}

// get is Get with f.mu held.
func (f *Fake) get(name string) (*v1alpha1.Sandbox, error) {
	if err := f.injected(OpGet); err != nil {
		return nil, err
	}
	b, ok := f.boxes[name]
	if !ok {
		return nil, NotFound(name)
	}
	f.noteUsed(b.sb, time.Time{})
	return b.sb.DeepCopy(), nil
}

// GetFor returns the Sandbox of (user, chat), found by its canonical name; one of that
// name owned by another pair is a *sandbox.ConflictError.
func (f *Fake) GetFor(ctx context.Context, user, chat string) (*v1alpha1.Sandbox, error) {
	name, err := sandbox.PodName(user, chat)
	if err != nil {
		return nil, err
	}
	sb, err := f.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if sb.Spec.UserID != user || sb.Spec.ChatID != chat {
		return nil, &sandbox.ConflictError{Name: name, UserID: user, ChatID: chat, OwnerUserID: sb.Spec.UserID, OwnerChatID: sb.Spec.ChatID}
	}
	return sb, nil
}

// List returns the Sandboxes that match opts, sorted by name (as the API server lists).
func (f *Fake) List(ctx context.Context, opts sandbox.ListOptions) ([]v1alpha1.Sandbox, error) {
	sel := labels.Everything()
	if opts.LabelSelector != "" {
		var err error
		if sel, err = labels.Parse(opts.LabelSelector); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(OpList); err != nil {
		return nil, err
	}
	var out []v1alpha1.Sandbox
	for _, b := range f.boxes {
		sb := b.sb
		if (opts.UserID != "" && sb.Spec.UserID != opts.UserID) || (opts.ChatID != "" && sb.Spec.ChatID != opts.ChatID) ||
			!sel.Matches(labels.Set(sb.Labels)) {
			continue
		}
		f.noteUsed(sb, time.Time{})
		out = append(out, *sb.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ListByUser returns the user's Sandboxes.
func (f *Fake) ListByUser(ctx context.Context, user string) ([]v1alpha1.Sandbox, error) {
	if user == "" {
		return nil, sandbox.ErrInvalidID
	}
	return f.List(ctx, sandbox.ListOptions{UserID: user})
}

// GetOrCreate returns the Sandbox of (req.UserID, req.ChatID), creating it when there is
// none, and whether it created it (the Client's rules: canonical name, a stranger's
// Sandbox of that name is a *sandbox.ConflictError).
func (f *Fake) GetOrCreate(ctx context.Context, req sandbox.Request) (*v1alpha1.Sandbox, bool, error) {
	name, err := sandbox.PodName(req.UserID, req.ChatID)
	if err != nil {
		return nil, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.boxes[name]; ok {
		if err := f.injected(OpGet); err != nil {
			return nil, false, err
		}
		sb := b.sb
		if sb.Spec.UserID != req.UserID || sb.Spec.ChatID != req.ChatID {
			return nil, false, &sandbox.ConflictError{Name: name, UserID: req.UserID, ChatID: req.ChatID,
				OwnerUserID: sb.Spec.UserID, OwnerChatID: sb.Spec.ChatID}
		}
		f.noteUsed(sb, time.Time{})
		return sb.DeepCopy(), false, nil
	}
	sb := &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: req.Labels, Annotations: req.Annotations},
		Spec:       req.Spec,
	}
	sb.Spec.UserID, sb.Spec.ChatID = req.UserID, req.ChatID
	out, err := f.create(sb)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// Create stores sb (status dropped, as the API server does for a resource with a status
// subresource) and returns what was stored; the fake controller then runs it.
func (f *Fake) Create(ctx context.Context, sb *v1alpha1.Sandbox) (*v1alpha1.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.create(sb)
}

// create is Create with f.mu held.
func (f *Fake) create(in *v1alpha1.Sandbox) (*v1alpha1.Sandbox, error) {
	if err := f.injected(OpCreate); err != nil {
		return nil, err
	}
	if in.Namespace != "" && in.Namespace != f.namespace {
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if err := validName(in.Name); err != nil {
		return nil, err
	}
	if _, ok := f.boxes[in.Name]; ok {
		return nil, AlreadyExists(in.Name)
	}
	sb := in.DeepCopy()
	sb.UID, sb.ResourceVersion, sb.Generation, sb.CreationTimestamp = "", "", 0, metav1.Time{}
	sb.DeletionTimestamp = nil
	sb.Status = v1alpha1.SandboxStatus{}
	f.fillMeta(sb)
	b := &box{sb: sb}
	b.resetFiles()
	f.boxes[sb.Name] = b
	f.bump(b)
	out := sb.DeepCopy()
	f.settle(b)
	return out, nil
}

// patch applies change to the stored Sandbox and returns it as stored (before the fake
// controller reacts, as the API server's answer would be), f.mu held.
func (f *Fake) patch(name string, change func(sb *v1alpha1.Sandbox)) (*v1alpha1.Sandbox, error) {
	if err := f.injected(OpUpdate); err != nil {
		return nil, err
	}
	b, ok := f.boxes[name]
	if !ok {
		return nil, NotFound(name)
	}
	before := b.sb.Spec.DeepCopy()
	change(b.sb)
	if !equalSpec(before, &b.sb.Spec) {
		b.sb.Generation++
	}
	f.bump(b)
	out := b.sb.DeepCopy()
	f.settle(b)
	return out, nil
}

func equalSpec(a, b *v1alpha1.SandboxSpec) bool {
	return fmt.Sprintf("%#v", *a) == fmt.Sprintf("%#v", *b) // (pointers are compared by address: a change either way)
}

// Start clears spec.paused and marks the Sandbox used, as Client.Start; the fake
// controller then runs it (unless Manual).
func (f *Fake) Start(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.start(name)
}

func (f *Fake) start(name string) (*v1alpha1.Sandbox, error) {
	now := f.now()
	sb, err := f.patch(name, func(sb *v1alpha1.Sandbox) {
		setLastUsed(sb, now)
		sb.Spec.Paused = false
	})
	if err == nil {
		f.noteUsed(sb, now)
	}
	return sb, err
}

// Stop sets spec.paused; the fake controller then stops it (unless Manual).
func (f *Fake) Stop(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.patch(name, func(sb *v1alpha1.Sandbox) { sb.Spec.Paused = true })
}

// Remove deletes the Sandbox at once (the fake has no finalizers); a missing one is not
// an error, as with the Client.
func (f *Fake) Remove(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(OpDelete); err != nil {
		return err
	}
	if _, ok := f.boxes[name]; ok {
		delete(f.boxes, name)
		delete(f.touched, name)
		f.bump(nil)
	}
	return nil
}

// ---- the fake controller ----------------------------------------------------------------

// settle is the fake controller's reaction to a write (f.mu held): a paused Sandbox
// stops, another one runs, unless SetPending holds it; with Manual, a new one is Pending
// and nothing else happens.
func (f *Fake) settle(b *box) {
	sb := b.sb
	if sb.Status.Lifecycle == "" {
		sb.Status.Lifecycle = sb.Spec.Lifecycle
		if sb.Status.Lifecycle == "" {
			sb.Status.Lifecycle = v1alpha1.LifecycleSession
		}
		sb.Status.IdleTimeout = sb.Spec.IdleTimeout
		sb.Status.WorkspaceClaim = sb.Name
	}
	sb.Status.ObservedGeneration = sb.Generation
	switch {
	case sb.Status.Phase == v1alpha1.PhaseSucceeded || sb.Status.Phase == v1alpha1.PhaseFailed:
	case f.manual:
		if sb.Status.Phase == "" {
			f.setPending(b, "Pending", "waiting for the test to run it (sandboxfake.Options.Manual)")
		}
	case sb.Spec.Paused:
		if sb.Status.Phase != v1alpha1.PhaseStopped {
			f.setStopped(b, v1alpha1.ReasonPaused, "spec.paused is set")
		}
	case !sb.IsRunning() && !b.held:
		f.setRunning(b)
	}
	f.bump(b)
}

func setCondition(sb *v1alpha1.Sandbox, status metav1.ConditionStatus, reason, message string, now time.Time) {
	c := metav1.Condition{Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: message,
		ObservedGeneration: sb.Generation, LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
	if old := sb.ReadyCondition(); old != nil {
		if old.Status == status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return
	}
	sb.Status.Conditions = append(sb.Status.Conditions, c)
}

// setRunning: a new pod, named like the Sandbox, runs (f.mu held). Files outside the
// workspace are gone with the old pod.
func (f *Fake) setRunning(b *box) {
	sb, now := b.sb, f.now()
	if sb.Status.PodName == "" || sb.Status.Phase != v1alpha1.PhaseRunning {
		b.dropPodFiles()
		b.logs = nil
	}
	sb.Status.Phase = v1alpha1.PhaseRunning
	sb.Status.PodName = sb.Name
	sb.Status.PodIP = "10.244.0." + strconv.Itoa(1+int(f.rv%250))
	sb.Status.NodeName = "fake-node"
	t := metav1.NewTime(now.Truncate(time.Second))
	sb.Status.StartedAt = &t
	sb.Status.StoppedAt = nil
	sb.Status.QueuePosition = 0
	setCondition(sb, metav1.ConditionTrue, v1alpha1.ReasonPodReady, "the sandbox pod is ready", now)
}

func (f *Fake) setStopped(b *box, reason, message string) {
	sb, now := b.sb, f.now()
	sb.Status.Phase = v1alpha1.PhaseStopped
	sb.Status.PodName, sb.Status.PodIP, sb.Status.NodeName = "", "", ""
	t := metav1.NewTime(now.Truncate(time.Second))
	sb.Status.StoppedAt = &t
	setCondition(sb, metav1.ConditionFalse, reason, message, now)
}

func (f *Fake) setPending(b *box, reason, message string) {
	sb := b.sb
	sb.Status.Phase = v1alpha1.PhasePending
	sb.Status.PodName, sb.Status.PodIP, sb.Status.NodeName = "", "", ""
	setCondition(sb, metav1.ConditionFalse, reason, message, f.now())
}

// moveTo applies a test's state change to name (f.mu held).
func (f *Fake) moveTo(name string, move func(b *box)) error {
	b, ok := f.boxes[name]
	if !ok {
		return NotFound(name)
	}
	move(b)
	f.bump(b)
	return nil
}

// SetRunning makes the Sandbox Running with a pod (named like it), Ready True, as the
// controller does once its pod is ready. A Sandbox that was not running gets a new pod:
// the files outside its workspace and its logs are gone.
func (f *Fake) SetRunning(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.moveTo(name, func(b *box) { b.held = false; f.setRunning(b) })
}

// SetPending makes the Sandbox Pending without a pod, its Ready condition False with
// reason and message: v1alpha1.ReasonCapacityExceeded, "ImagePullBackOff",
// "Unschedulable", v1alpha1.ReasonInvalidSpec (final: waits give up at once), ... It stays
// so (starting it does not run it) until SetRunning or SetStopped.
func (f *Fake) SetPending(name, reason, message string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.moveTo(name, func(b *box) { b.held = true; f.setPending(b, reason, message) })
}

// SetStopped makes the Sandbox Stopped (its pod gone, the workspace kept) with reason:
// v1alpha1.ReasonIdle or ReasonReclaimed (the controller stopped it; a use starts it
// again), ReasonPaused, ...
func (f *Fake) SetStopped(name, reason, message string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.moveTo(name, func(b *box) { b.held = false; f.setStopped(b, reason, message) })
}

// Update changes the stored Sandbox in any way (status included; e.g. a finished
// one-shot's phase and status.run, or a deletionTimestamp) and wakes the waits.
func (f *Fake) Update(name string, change func(sb *v1alpha1.Sandbox)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.moveTo(name, func(b *box) {
		change(b.sb)
		b.sb.Name, b.sb.Namespace = name, f.namespace
	})
}

// ---- waiting --------------------------------------------------------------------------

// waitFor calls state on the Sandbox at every change until it is done or fails, or ctx
// ends (the Client's waits, without a watch).
func (f *Fake) waitFor(ctx context.Context, name string, uid types.UID, want string,
	state func(*v1alpha1.Sandbox) (bool, error)) (*v1alpha1.Sandbox, error) {
	var last *v1alpha1.Sandbox
	for {
		f.mu.Lock()
		changed := f.changed
		sb, err := f.get(name)
		f.mu.Unlock()
		if sandbox.IsNotFound(err) || (err == nil && uid != "" && sb.UID != uid) {
			return nil, fmt.Errorf("sandbox %q: %w", name, sandbox.ErrDeleted)
		}
		if err != nil {
			return nil, err
		}
		last = sb
		if done, err := state(sb); done || err != nil {
			return sb, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, sandbox.NewNotReadyError(last, want, "gave up waiting", ctx.Err())
		}
	}
}

// WaitReady waits until the Sandbox runs (sandbox.RunningState), as Client.WaitReady.
func (f *Fake) WaitReady(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	return f.waitFor(ctx, name, "", "Running", sandbox.RunningState)
}

// WaitStopped waits until the Sandbox is Stopped, finished, or gone (nil, nil).
func (f *Fake) WaitStopped(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	sb, err := f.waitFor(ctx, name, "", "Stopped", sandbox.StoppedState)
	if err != nil && isDeleted(err) {
		return nil, nil
	}
	return sb, err
}

// WaitGone waits until the Sandbox called name (with uid, when set) no longer exists.
func (f *Fake) WaitGone(ctx context.Context, name string, uid types.UID) error {
	_, err := f.waitFor(ctx, name, uid, "deleted", func(*v1alpha1.Sandbox) (bool, error) { return false, nil })
	if err != nil && isDeleted(err) {
		return nil
	}
	return err
}

// EnsureRunning starts the Sandbox when it does not run and waits for it (up to
// StartTimeout), as Client.EnsureRunning; a running one is marked used.
func (f *Fake) EnsureRunning(ctx context.Context, name string) (*v1alpha1.Sandbox, error) {
	f.mu.Lock()
	sb, err := f.get(name)
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	if sb.DeletionTimestamp != nil {
		f.mu.Unlock()
		_, err := sandbox.RunningState(sb)
		return nil, err
	}
	if sb.IsRunning() {
		_, err := f.markUsed(name)
		f.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return sb, nil
	}
	_, err = f.start(name)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, f.StartTimeout)
	defer cancel()
	return f.WaitReady(wctx, name)
}

// ---- last-used-at -----------------------------------------------------------------------

func setLastUsed(sb *v1alpha1.Sandbox, t time.Time) {
	if sb.Annotations == nil {
		sb.Annotations = map[string]string{}
	}
	sb.Annotations[v1alpha1.AnnotationLastUsedAt] = t.UTC().Format(time.RFC3339)
}

// noteUsed records the newest use known of sb (f.mu held), as the Client does.
func (f *Fake) noteUsed(sb *v1alpha1.Sandbox, at time.Time) {
	last := f.touched[sb.Name]
	if t, err := time.Parse(time.RFC3339Nano, sb.Annotations[v1alpha1.AnnotationLastUsedAt]); err == nil && t.After(last) {
		last = t
	}
	if at.After(last) {
		last = at
	}
	f.touched[sb.Name] = last
}

// Touch sets last-used-at to now.
func (f *Fake) Touch(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.touch(name)
}

func (f *Fake) touch(name string) error {
	now := f.now()
	sb, err := f.patch(name, func(sb *v1alpha1.Sandbox) { setLastUsed(sb, now) })
	if err == nil {
		f.noteUsed(sb, now)
	}
	return err
}

// MarkUsed sets last-used-at to now unless the newest use known is younger than the
// Sandbox's touch interval (sandbox.TouchInterval of sandbox.KeepAliveWindow), and
// reports whether it wrote, as Client.MarkUsed.
func (f *Fake) MarkUsed(ctx context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.markUsed(name)
}

func (f *Fake) markUsed(name string) (bool, error) {
	b, ok := f.boxes[name]
	if !ok {
		return false, NotFound(name)
	}
	f.noteUsed(b.sb, time.Time{})
	if f.now().Sub(f.touched[name]) < sandbox.TouchInterval(sandbox.KeepAliveWindow(b.sb)) {
		return false, nil
	}
	return true, f.touch(name)
}

// Heartbeat runs MarkUsed now and once per touch interval until stop is called or ctx
// ends, as Client.Heartbeat (on the wall clock, whatever Now says).
func (f *Fake) Heartbeat(ctx context.Context, name string, onError func(error)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if _, err := f.MarkUsed(ctx, name); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
			every := time.Second
			f.mu.Lock()
			if b, ok := f.boxes[name]; ok {
				every = sandbox.TouchInterval(sandbox.KeepAliveWindow(b.sb))
			}
			f.mu.Unlock()
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

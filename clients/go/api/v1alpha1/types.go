package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Well-known names shared with the controller (controller/sandbox/model/spec.h).
const (
	// AnnotationLastUsedAt is the RFC 3339 time a client last used the sandbox; the
	// controller's idle clock counts from the newest of it and status.startedAt.
	AnnotationLastUsedAt = "sandbox.yaoapps.com/last-used-at"
	// AnnotationUserID and AnnotationChatID hold the raw IDs on the objects the controller
	// creates (labels carry sanitised values).
	AnnotationUserID = "sandbox.yaoapps.com/user-id"
	AnnotationChatID = "sandbox.yaoapps.com/chat-id"

	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelName      = "sandbox.yaoapps.com/name"
	LabelUser      = "sandbox.yaoapps.com/user"
	LabelChat      = "sandbox.yaoapps.com/chat"
	LabelLifecycle = "sandbox.yaoapps.com/lifecycle"

	// ContainerName is the name of the sandbox container in the pod.
	ContainerName = "sandbox"
	// DefaultMountPath is where the workspace is mounted when spec.workspace.mountPath is unset.
	DefaultMountPath = "/workspace"

	// FieldUserID and FieldChatID are the CRD's selectableFields, for field selectors
	// such as "spec.userID=alice".
	FieldUserID = "spec.userID"
	FieldChatID = "spec.chatID"
)

// Lifecycle is a Sandbox's lifecycle policy.
type Lifecycle string

const (
	LifecycleOneShot     Lifecycle = "one-shot"
	LifecycleSession     Lifecycle = "session"
	LifecycleLongRunning Lifecycle = "long-running"
	LifecyclePersistent  Lifecycle = "persistent"
)

// Phase is where a Sandbox is in its lifecycle.
type Phase string

const (
	PhasePending   Phase = "Pending"
	PhaseCreating  Phase = "Creating"
	PhaseRunning   Phase = "Running"
	PhaseStopping  Phase = "Stopping"
	PhaseStopped   Phase = "Stopped"
	PhaseSucceeded Phase = "Succeeded"
	PhaseFailed    Phase = "Failed"
)

// ConditionReady is the condition type every Sandbox carries.
const ConditionReady = "Ready"

// Reasons of the Ready condition that the client acts on (the controller sets more:
// Creating, PodNotReady, ImagePullBackOff, CrashLoopBackOff, Unschedulable, ...).
const (
	ReasonPodReady         = "PodReady"
	ReasonCapacityExceeded = "CapacityExceeded"
	ReasonInvalidSpec      = "InvalidSpec"
	ReasonNameConflict     = "NameConflict"
	ReasonIdle             = "Idle"
	ReasonPaused           = "Paused"
	// ReasonWarmIdle: Running and Ready, but idle past its timeout with its CPU resized down
	// to its class's spec.warmIdle.cpu until the next use (status.warmIdleSince).
	ReasonWarmIdle = "WarmIdle"
	// ReasonUserCapacityExceeded: the user's cap (the controller's, or its SandboxClass's
	// maxRunningPerUser, which the message names) holds it.
	ReasonUserCapacityExceeded = "UserCapacityExceeded"
	// ReasonReclaimed: stopped while idle to admit a waiting sandbox (SandboxClass
	// spec.reclaim); the workspace is kept and the next use starts it again.
	ReasonReclaimed = "Reclaimed"
)

// AnnotationDefaultClass marks the default SandboxClass ("true"), as for StorageClasses.
const AnnotationDefaultClass = "sandbox.yaoapps.com/is-default-class"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Sandbox is an isolated, persistent pod (plus its workspace claim) for one (user, chat)
// pair of a Yao application.
type Sandbox struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SandboxSpec   `json:"spec"`
	Status SandboxStatus `json:"status,omitempty"`
}

// SandboxSpec is what the client asks for. Empty fields take the controller's defaults.
type SandboxSpec struct {
	UserID string `json:"userID"`
	ChatID string `json:"chatID"`
	// Image is the container image; the controller's YAO_SANDBOX_IMAGE when empty.
	Image string `json:"image,omitempty"`
	// Lifecycle is the policy; empty takes the SandboxClass's default, else the
	// controller's (session). Status.Lifecycle says which one is in force.
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
	// ClassName names the SandboxClass (cluster-scoped) whose defaults and limits apply;
	// empty takes the class marked default, if any.
	ClassName string `json:"className,omitempty"`
	// IdleTimeout is a duration string such as "90s", "30m", "2h".
	IdleTimeout string `json:"idleTimeout,omitempty"`
	// Paused stops the sandbox (pod deleted, workspace kept); false starts it again.
	Paused    bool           `json:"paused,omitempty"`
	Command   []string       `json:"command,omitempty"`
	Args      []string       `json:"args,omitempty"`
	Env       []EnvVar       `json:"env,omitempty"`
	Resources *Resources     `json:"resources,omitempty"`
	Workspace *WorkspaceSpec `json:"workspace,omitempty"`
	Run       *RunSpec       `json:"run,omitempty"`
	// TTLSecondsAfterFinished is, for one-shot, how long the finished Sandbox stays.
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// Ports the sandbox's programs listen on: the container's ports (and the Service's).
	Ports []Port `json:"ports,omitempty"`
	// Service asks for a ClusterIP Service for Ports, owned by the Sandbox.
	Service *ServiceSpec `json:"service,omitempty"`
	// Network narrows the egress its SandboxClass allows (classes with network mode isolated).
	Network *NetworkSpec `json:"network,omitempty"`
}

// NetworkSpec is a Sandbox's own network policy, within its class's.
type NetworkSpec struct {
	// EgressCIDRs the sandbox may reach, each within the class's egressCIDRs.
	EgressCIDRs []string `json:"egressCIDRs,omitempty"`
}

// Port is one port of the sandbox's container.
type Port struct {
	// Name is an IANA service name: at most 15 of [a-z0-9-], a letter among them. Unique.
	Name string `json:"name"`
	// Port is the number inside the sandbox, 1-65535 (unique per protocol).
	Port int32 `json:"port"`
	// Protocol is TCP (the default), UDP or SCTP.
	Protocol string `json:"protocol,omitempty"`
}

// ServiceSpec turns the Sandbox's Service on.
type ServiceSpec struct {
	Enabled bool `json:"enabled,omitempty"`
}

// Endpoint is where one of spec.ports is reached.
type Endpoint struct {
	Name           string `json:"name,omitempty"`
	Port           int32  `json:"port,omitempty"`
	Protocol       string `json:"protocol,omitempty"`
	PodAddress     string `json:"podAddress,omitempty"`     // podIP:port while the pod runs
	ServiceAddress string `json:"serviceAddress,omitempty"` // clusterIP:port
	ServiceDNS     string `json:"serviceDNS,omitempty"`     // NAME.NAMESPACE.svc:port
}

// ServiceStatus is the Sandbox's Service once it exists.
type ServiceStatus struct {
	Name      string `json:"name,omitempty"`
	ClusterIP string `json:"clusterIP,omitempty"`
	DNSName   string `json:"dnsName,omitempty"`
}

// EnvVar is one environment variable of the container (or of a one-shot run).
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
	// ValueFrom takes the value from a Secret in the Sandbox's namespace instead (read by
	// the kubelet: neither the Sandbox nor the controller holds it). Not with Value.
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is where a variable's value comes from.
type EnvVarSource struct {
	SecretKeyRef *SecretKeySelector `json:"secretKeyRef,omitempty"`
}

// SecretKeySelector is one key of a Secret in the Sandbox's namespace.
type SecretKeySelector struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional,omitempty"`
}

// Resources are the container's limits (memory "2g"/"2Gi", cpu "1.0"/"500m") and,
// optionally, its requests.
type Resources struct {
	Memory *intstr.IntOrString `json:"memory,omitempty"`
	CPU    *intstr.IntOrString `json:"cpu,omitempty"`
	// EphemeralStorage limits the container's writable layer, logs and emptyDirs.
	EphemeralStorage *intstr.IntOrString `json:"ephemeralStorage,omitempty"`
	Requests         *ResourceRequests   `json:"requests,omitempty"`
}

// ResourceRequests is what the scheduler reserves; each at most its limit.
type ResourceRequests struct {
	Memory *intstr.IntOrString `json:"memory,omitempty"`
	CPU    *intstr.IntOrString `json:"cpu,omitempty"`
}

// WorkspaceSpec describes the PersistentVolumeClaim that holds the user's files.
type WorkspaceSpec struct {
	Size             *intstr.IntOrString `json:"size,omitempty"`
	StorageClassName *string             `json:"storageClassName,omitempty"`
	MountPath        string              `json:"mountPath,omitempty"`
	// From starts the workspace as a clone of another Sandbox's (read when the claim is
	// created; immutable).
	From *WorkspaceSource `json:"from,omitempty"`
}

// WorkspaceSource names the Sandbox, in the same namespace, whose workspace is cloned.
type WorkspaceSource struct {
	Sandbox string `json:"sandbox"`
}

// RunSpec is a one-shot Sandbox's command.
type RunSpec struct {
	Command    []string `json:"command"`
	WorkingDir string   `json:"workingDir,omitempty"`
	Env        []EnvVar `json:"env,omitempty"`
	Timeout    string   `json:"timeout,omitempty"`
}

// SandboxStatus is the observed state, written by the controller.
type SandboxStatus struct {
	Phase           Phase             `json:"phase,omitempty"`
	PodName         string            `json:"podName,omitempty"`
	PodIP           string            `json:"podIP,omitempty"`
	NodeName        string            `json:"nodeName,omitempty"`
	WorkspaceClaim  string            `json:"workspaceClaim,omitempty"`
	StartedAt       *metav1.Time      `json:"startedAt,omitempty"`
	RestartCount    int32             `json:"restartCount,omitempty"`
	LastTermination *TerminationState `json:"lastTermination,omitempty"`
	StoppedAt       *metav1.Time      `json:"stoppedAt,omitempty"`
	// WarmIdleSince: set while the sandbox is warm-idle (Ready reason WarmIdle): idle past
	// its timeout, its pod kept with the CPU resized down; any use resizes it back up.
	WarmIdleSince *metav1.Time `json:"warmIdleSince,omitempty"`
	LastUsedAt    *metav1.Time `json:"lastUsedAt,omitempty"`
	// IgnoredLastUsedAt quotes a last-used-at annotation that is not an RFC 3339 time.
	IgnoredLastUsedAt  string `json:"ignoredLastUsedAt,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	// Lifecycle is the lifecycle in force: Spec.Lifecycle, else the default the Sandbox
	// got when the controller first resolved it (its class's, else the controller's).
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
	// IdleTimeout is the idle timeout in force, a duration as Spec.IdleTimeout takes it
	// ("5s", "30m"): Spec.IdleTimeout, else its class's, else the controller's.
	IdleTimeout string `json:"idleTimeout,omitempty"`
	// ReclaimAfter is its class's reclaim window (spec.reclaim.idleAfter), the same
	// format; empty when the sandbox is never reclaimed.
	ReclaimAfter string `json:"reclaimAfter,omitempty"`
	// IdleAt is when the sandbox becomes idle unless it is used before; nil when it never
	// does.
	IdleAt *metav1.Time `json:"idleAt,omitempty"`
	// QueuePosition is its place in line (1 = next) while it waits for the running cap.
	QueuePosition int32              `json:"queuePosition,omitempty"`
	Run           *RunStatus         `json:"run,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
	Endpoints     []Endpoint         `json:"endpoints,omitempty"`
	Service       *ServiceStatus     `json:"service,omitempty"`
}

// TerminationState is the last time the sandbox container ended on its own.
type TerminationState struct {
	Reason     string       `json:"reason,omitempty"`
	ExitCode   int32        `json:"exitCode,omitempty"`
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// RunStatus is the result of a one-shot run: exit code, times, output tails (4 KiB each).
type RunStatus struct {
	ExitCode   *int32       `json:"exitCode,omitempty"`
	StartedAt  *metav1.Time `json:"startedAt,omitempty"`
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	Stdout     string       `json:"stdout,omitempty"`
	Stderr     string       `json:"stderr,omitempty"`
	Truncated  bool         `json:"truncated,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxList is a list of Sandboxes.
type SandboxList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sandbox `json:"items"`
}

// EffectiveLifecycle is the lifecycle in force: Spec.Lifecycle when set, else the one the
// controller recorded (Status.Lifecycle); empty before the controller's first pass.
func (s *Sandbox) EffectiveLifecycle() Lifecycle {
	if s.Spec.Lifecycle != "" {
		return s.Spec.Lifecycle
	}
	return s.Status.Lifecycle
}

// ReadyCondition returns the Ready condition, or nil when the controller has not set it yet.
func (s *Sandbox) ReadyCondition() *metav1.Condition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == ConditionReady {
			return &s.Status.Conditions[i]
		}
	}
	return nil
}

// MountPath is where the workspace is mounted in the container.
func (s *Sandbox) MountPath() string {
	if s.Spec.Workspace != nil && s.Spec.Workspace.MountPath != "" {
		return s.Spec.Workspace.MountPath
	}
	return DefaultMountPath
}

// IsRunning is true when the sandbox has a running pod that commands can be sent to:
// phase Running with a pod, not paused, not being deleted.
func (s *Sandbox) IsRunning() bool {
	return s.Status.Phase == PhaseRunning && s.Status.PodName != "" && !s.Spec.Paused &&
		s.DeletionTimestamp == nil
}

// ClassResource is the plural resource name of SandboxClasses (cluster-scoped).
const ClassResource = "sandboxclasses"

// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxClass is the operator's template and limits for Sandboxes (cluster-scoped), like
// a StorageClass: the Sandboxes naming it in spec.className, or all without one for the
// class annotated AnnotationDefaultClass: "true".
type SandboxClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SandboxClassSpec `json:"spec,omitempty"`
}

// SandboxClassSpec holds the class's defaults and ceilings; unset fields leave the
// controller's flag defaults in force.
type SandboxClassSpec struct {
	Image     *ClassImage     `json:"image,omitempty"`
	Resources *ClassResources `json:"resources,omitempty"`
	Workspace *ClassWorkspace `json:"workspace,omitempty"`
	// RuntimeClassName of sandbox pods (e.g. gvisor, kata).
	RuntimeClassName string `json:"runtimeClassName,omitempty"`
	// Placement of sandbox pods, as in a Pod spec.
	NodeSelector      map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations       []corev1.Toleration `json:"tolerations,omitempty"`
	Affinity          *corev1.Affinity    `json:"affinity,omitempty"`
	PriorityClassName string              `json:"priorityClassName,omitempty"`
	// Lifecycle of Sandboxes that set none (taken once, when the controller first sees one).
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
	// IdleTimeout of Sandboxes that set none, e.g. "30m".
	IdleTimeout string `json:"idleTimeout,omitempty"`
	// MaxRunningPerUser caps a user's running Sandboxes of this class (0: none).
	MaxRunningPerUser int32 `json:"maxRunningPerUser,omitempty"`
	// MaxRunningPerUserScope says where MaxRunningPerUser counts a user: "Namespace"
	// (the default: a userID within one namespace) or "Cluster" (a userID in every
	// namespace together).
	MaxRunningPerUserScope string `json:"maxRunningPerUserScope,omitempty"`
	// Reclaim lets idle Sandboxes of this class be stopped to admit waiting ones.
	Reclaim *ClassReclaim `json:"reclaim,omitempty"`
	// Network is the class's network policy (mode none or isolated).
	Network *ClassNetwork `json:"network,omitempty"`
	// Secrets are the Secrets its Sandboxes may take env values from (unset: none).
	Secrets *ClassSecrets `json:"secrets,omitempty"`
}

// ClassSecrets names the Secrets (in each Sandbox's own namespace) that a Sandbox of the
// class may name in env valueFrom.secretKeyRef; any other is refused (SecretNotAllowed).
type ClassSecrets struct {
	Names []string `json:"names,omitempty"`
}

// ClassImage is the default image and the allowed image prefixes (none: any image).
type ClassImage struct {
	Default         string   `json:"default,omitempty"`
	AllowedPrefixes []string `json:"allowedPrefixes,omitempty"`
}

// ClassResources are the defaults and ceilings of the container's limits.
type ClassResources struct {
	Memory           *ClassLimit `json:"memory,omitempty"`
	CPU              *ClassLimit `json:"cpu,omitempty"`
	EphemeralStorage *ClassLimit `json:"ephemeralStorage,omitempty"`
}

// ClassLimit is a default (used when the Sandbox sets none) and a ceiling.
type ClassLimit struct {
	Default *intstr.IntOrString `json:"default,omitempty"`
	Max     *intstr.IntOrString `json:"max,omitempty"`
}

// ClassWorkspace is the workspace claim's StorageClass and size limits.
type ClassWorkspace struct {
	StorageClassName         string              `json:"storageClassName,omitempty"`
	AllowedStorageClassNames []string            `json:"allowedStorageClassNames,omitempty"`
	DefaultSize              *intstr.IntOrString `json:"defaultSize,omitempty"`
	MaxSize                  *intstr.IntOrString `json:"maxSize,omitempty"`
}

// ClassReclaim: while a Sandbox waits for the controller's running cap, a running session
// or long-running Sandbox of the class idle for IdleAfter may be stopped (workspace kept)
// to admit it.
type ClassReclaim struct {
	IdleAfter string `json:"idleAfter,omitempty"`
}

// ClassNetwork is the NetworkPolicy of the class's sandboxes (mode isolated).
type ClassNetwork struct {
	// Mode is none (the default: no policy) or isolated.
	Mode           string      `json:"mode,omitempty"`
	IngressFrom    []ClassPeer `json:"ingressFrom,omitempty"`
	EgressCIDRs    []string    `json:"egressCIDRs,omitempty"`
	AllowDNS       *bool       `json:"allowDNS,omitempty"`
	AllowAPIServer *bool       `json:"allowAPIServer,omitempty"`
	AllowMetadata  *bool       `json:"allowMetadata,omitempty"`
}

// ClassPeer is who may connect to a sandbox, as a NetworkPolicy peer.
type ClassPeer struct {
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	PodSelector       *metav1.LabelSelector `json:"podSelector,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxClassList is a list of SandboxClasses.
type SandboxClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxClass `json:"items"`
}

// IsDefault is true for the class marked default.
func (c *SandboxClass) IsDefault() bool {
	return c.Annotations[AnnotationDefaultClass] == "true"
}

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Sandboxes.
const GroupName = "sandbox.yaoapps.com"

// SchemeGroupVersion is the group and version of these types.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource is the plural resource name, as in /apis/sandbox.yaoapps.com/v1alpha1/.../sandboxes.
const Resource = "sandboxes"

var (
	// SchemeBuilder registers the Sandbox types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds Sandbox, SandboxList, SandboxClass and SandboxClassList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the types and the meta/v1 options (ListOptions, WatchEvent...)
// for this group version.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Sandbox{}, &SandboxList{}, &SandboxClass{}, &SandboxClassList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

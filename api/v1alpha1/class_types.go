/*
Copyright 2026 The Sandbar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SlotRef puts a Property on a Class.
type SlotRef struct {
	// property is the name of the Property.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Property string `json:"property"`

	// required makes the slot mandatory in every instance of the Class and its subclasses.
	// +optional
	Required bool `json:"required,omitempty"`
}

// DeletionPolicy says what happens to a Class's generated CRD, and so to its
// instances, when the Class is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionPolicyRetain keeps the CRD and every instance.
	DeletionPolicyRetain DeletionPolicy = "Retain"
	// DeletionPolicyDelete deletes the CRD and with it every instance.
	DeletionPolicyDelete DeletionPolicy = "Delete"
)

// InstanceAPISpec shapes the CRD generated for a concrete Class.
type InstanceAPISpec struct {
	// enabled set to false gives the Class no generated CRD, for example to stay well
	// under the number of CRDs a cluster handles comfortably (a few hundred).
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// plural is the resource name of instances; defaults to the lower-case plural of kind.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([a-z0-9]*[a-z0-9])?$`
	Plural string `json:"plural,omitempty"`

	// shortNames are extra names for kubectl.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Pattern=`^[a-z]([a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:items:MaxLength=63
	ShortNames []string `json:"shortNames,omitempty"`

	// deletionPolicy: Retain (the default) keeps the CRD and all instances when the
	// Class is deleted; Delete removes them.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// allowBreakingChanges lets a schema change through that stored instances may not
	// satisfy (a slot's type changed, a slot removed, a slot newly required). Without it
	// such a change is refused and reported in status.
	// +optional
	AllowBreakingChanges bool `json:"allowBreakingChanges,omitempty"`
}

// CodecFormat is a text format of instances.
// +kubebuilder:validation:Enum=json;markdown
type CodecFormat string

const (
	CodecJSON     CodecFormat = "json"
	CodecMarkdown CodecFormat = "markdown"
)

// CodecSpec says how a class's instances read as text.
type CodecSpec struct {
	// format is the class's own format, used when its instances are read as MCP
	// resources: json (the default) or markdown (slot values in YAML front matter,
	// the section slots as Markdown sections below it).
	// +optional
	// +kubebuilder:default=json
	Format CodecFormat `json:"format,omitempty"`

	// sections are the fields of single-valued string slots written, in this order, as
	// Markdown sections ("# <field>") rather than in the front matter.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	Sections []string `json:"sections,omitempty"`
}

// ClassSpec declares a class of the metamodel.
type ClassSpec struct {
	// prefix is the namespace of the class, as "zorp" in zorp/SpaceBoot. Instances of
	// the class are served in the API group <prefix>.sandbar.dev. "meta" is reserved.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z]([a-z0-9-]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'meta'",message="prefix meta is reserved: it would name the API group meta.sandbar.dev, which is Sandbar's own; choose another prefix"
	Prefix string `json:"prefix"`

	// kind is the class's name in UpperCamelCase, as "SpaceBoot" in zorp/SpaceBoot.
	// It is also the kind of the generated instance API, so at most 59 characters: the
	// API server takes kinds and list kinds (<kind>List) of at most 63.
	// +required
	// +kubebuilder:validation:MaxLength=59
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kind string `json:"kind"`

	// description tells people and AI clients what the class is for.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`

	// abstract classes have no instances of their own; they exist to be inherited.
	// +optional
	Abstract bool `json:"abstract,omitempty"`

	// parents are the names of the Classes this class inherits slots from, in order.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	Parents []string `json:"parents,omitempty"`

	// slots are the Properties the class declares itself; it also has every slot of
	// its ancestors.
	// +optional
	// +listType=map
	// +listMapKey=property
	// +kubebuilder:validation:MaxItems=128
	Slots []SlotRef `json:"slots,omitempty"`

	// instanceAPI shapes the CRD generated for a concrete class.
	// +optional
	InstanceAPI InstanceAPISpec `json:"instanceAPI,omitempty"`

	// codec says how instances read as text (json or markdown).
	// +optional
	Codec CodecSpec `json:"codec,omitempty"`
}

// EffectiveSlot is one slot of a class after inheritance.
type EffectiveSlot struct {
	// property is the name of the Property.
	Property string `json:"property"`
	// field is the slot's JSON field name in instances.
	Field string `json:"field"`
	// range is the slot's value type.
	Range PropertyRange `json:"range"`
	// cardinality is one or many.
	Cardinality Cardinality `json:"cardinality"`
	// required is true when this class or an ancestor requires the slot.
	// +optional
	Required bool `json:"required,omitempty"`
	// from is the Class that declares the slot.
	From string `json:"from"`
}

// InstanceAPIStatus names the generated CRD of a class.
type InstanceAPIStatus struct {
	// group of the generated API, <prefix>.sandbar.dev.
	Group string `json:"group"`
	// version of the generated API.
	Version string `json:"version"`
	// kind of the instances.
	Kind string `json:"kind"`
	// plural resource name of the instances.
	Plural string `json:"plural"`
	// crdName is the name of the generated CustomResourceDefinition.
	CRDName string `json:"crdName"`
}

// ClassStatus is the class as the operator resolved it.
type ClassStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ancestors are every class this one inherits from, most general first.
	// +optional
	Ancestors []string `json:"ancestors,omitempty"`

	// effectiveSlots are the inherited and direct slots, ancestors' first.
	// +optional
	EffectiveSlots []EffectiveSlot `json:"effectiveSlots,omitempty"`

	// requiredSlots are the fields every instance must have.
	// +optional
	RequiredSlots []string `json:"requiredSlots,omitempty"`

	// slotCount is the number of effective slots.
	// +optional
	SlotCount int32 `json:"slotCount,omitempty"`

	// instanceAPI names the generated CRD, for concrete classes.
	// +optional
	InstanceAPI *InstanceAPIStatus `json:"instanceAPI,omitempty"`

	// conditions: ReferencesResolved, NameConflict, InstanceAPIEstablished, ClientLimits and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Class is a class of the metamodel. A concrete Class gets a generated CRD so that
// its instances are Kubernetes objects, and it becomes tools of the MCP server.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cls,categories=sandbar
// +kubebuilder:validation:XValidation:rule="!has(self.spec.parents) || !(self.metadata.name in self.spec.parents)",message="a Class cannot be its own parent"
// +kubebuilder:validation:XValidation:rule="(has(self.spec.abstract) && self.spec.abstract) || (has(self.spec.instanceAPI) && has(self.spec.instanceAPI.enabled) && !self.spec.instanceAPI.enabled) || size(self.metadata.name) <= 63",message="a Class with an instance API has a name of at most 63 characters (its generated CRD carries the name in a label); shorten metadata.name, or make the Class abstract or set spec.instanceAPI.enabled to false"
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.spec.prefix`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="Abstract",type=boolean,JSONPath=`.spec.abstract`
// +kubebuilder:printcolumn:name="Slots",type=integer,JSONPath=`.status.slotCount`
// +kubebuilder:printcolumn:name="Instance API",type=string,JSONPath=`.status.instanceAPI.crdName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Clients",type=string,JSONPath=`.status.conditions[?(@.type=="ClientLimits")].reason`
// +kubebuilder:printcolumn:name="Parents",type=string,priority=1,JSONPath=`.spec.parents`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Class struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the class.
	// +required
	Spec ClassSpec `json:"spec"`

	// status is the class as resolved by the operator.
	// +optional
	Status ClassStatus `json:"status,omitempty"`
}

// ClassList is a list of Classes.
// +kubebuilder:object:root=true
type ClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Class `json:"items"`
}

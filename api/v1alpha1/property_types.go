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

// PropertyRange is the type of a slot's values.
// +kubebuilder:validation:Enum=string;integer;number;boolean;date-time;keyword;uuid;uri;ref;json
type PropertyRange string

const (
	RangeString   PropertyRange = "string"
	RangeInteger  PropertyRange = "integer"
	RangeNumber   PropertyRange = "number"
	RangeBoolean  PropertyRange = "boolean"
	RangeDateTime PropertyRange = "date-time"
	RangeKeyword  PropertyRange = "keyword"
	RangeUUID     PropertyRange = "uuid"
	RangeURI      PropertyRange = "uri"
	RangeRef      PropertyRange = "ref"
	RangeJSON     PropertyRange = "json"
)

// Cardinality says whether a slot holds one value or a list of values.
// +kubebuilder:validation:Enum=one;many
type Cardinality string

const (
	CardinalityOne  Cardinality = "one"
	CardinalityMany Cardinality = "many"
)

// PropertySpec describes one slot that Classes can use.
// +kubebuilder:validation:XValidation:rule="self.range == 'ref' ? (has(self.target) && size(self.target) > 0) : !has(self.target)",message="target is required when range is ref and not allowed otherwise"
// +kubebuilder:validation:XValidation:rule="!has(self.enum) || self.range in ['string', 'keyword', 'uri', 'uuid']",message="enum applies only to ranges string, keyword, uri and uuid"
// +kubebuilder:validation:XValidation:rule="(!has(self.minimum) && !has(self.maximum)) || self.range in ['integer', 'number']",message="minimum and maximum apply only to ranges integer and number"
// +kubebuilder:validation:XValidation:rule="!has(self.minimum) || !has(self.maximum) || self.minimum <= self.maximum",message="minimum must not be greater than maximum"
// +kubebuilder:validation:XValidation:rule="(!has(self.pattern) && !has(self.maxLength)) || self.range in ['string', 'keyword', 'uri']",message="pattern and maxLength apply only to ranges string, keyword and uri"
type PropertySpec struct {
	// field is the JSON field name of the slot in instances (spec.<field>) and in tool
	// arguments. Defaults to the last dot-separated part of the Property's name in
	// camelCase: "footwear.tentacle-count" gives "tentacleCount".
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z][a-zA-Z0-9]*$`
	Field string `json:"field,omitempty"`

	// range is the type of the slot's values: string, integer, number, boolean,
	// date-time (RFC 3339), keyword (a namespaced name such as "zorp/red"), uuid, uri,
	// ref (the name of an instance of the target Class) or json (any JSON value).
	// +required
	Range PropertyRange `json:"range"`

	// cardinality is "one" for a single value or "many" for a list of values.
	// +optional
	// +kubebuilder:default=one
	Cardinality Cardinality `json:"cardinality,omitempty"`

	// description tells people and AI clients what the slot means.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Description string `json:"description,omitempty"`

	// target is the name of the Class that a ref slot points to.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Target string `json:"target,omitempty"`

	// enum lists the values the slot may take.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=256
	Enum []string `json:"enum,omitempty"`

	// minimum is the smallest value allowed for integer and number slots.
	// +optional
	Minimum *float64 `json:"minimum,omitempty"`

	// maximum is the largest value allowed for integer and number slots.
	// +optional
	Maximum *float64 `json:"maximum,omitempty"`

	// pattern is a regular expression (RE2 syntax) that string values must match.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Pattern string `json:"pattern,omitempty"`

	// maxLength is the largest number of characters allowed in a string value.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxLength *int64 `json:"maxLength,omitempty"`
}

// PropertyStatus is the observed state of a Property.
type PropertyStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// field is the JSON field name in effect (spec.field or the derived default).
	// +optional
	Field string `json:"field,omitempty"`

	// conditions: Valid, ReferencesResolved (for ref slots) and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Property is a slot of the metamodel: a named, typed field that Classes use.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=prop;props,categories=sandbar
// +kubebuilder:printcolumn:name="Field",type=string,JSONPath=`.status.field`
// +kubebuilder:printcolumn:name="Range",type=string,JSONPath=`.spec.range`
// +kubebuilder:printcolumn:name="Cardinality",type=string,JSONPath=`.spec.cardinality`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Property struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the slot.
	// +required
	Spec PropertySpec `json:"spec"`

	// status is the slot as the operator resolved it.
	// +optional
	Status PropertyStatus `json:"status,omitempty"`
}

// PropertyList is a list of Properties.
// +kubebuilder:object:root=true
type PropertyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Property `json:"items"`
}

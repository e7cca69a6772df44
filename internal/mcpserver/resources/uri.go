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

package resources

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sandbar-dev/sandbar/internal/codec"
	"github.com/sandbar-dev/sandbar/internal/mcpserver/apps"
)

// Resource URIs. Every instance and every metamodel object has one:
//
//	mcp://sandbar/<prefix>/<Kind>/<namespace>/<name>   an instance, as mcp://sandbar/zorp/SpaceBoot/default/moonwalker
//	mcp://sandbar/meta/<kind>/<name>                   a Class, Property or WorkflowDefinition, as mcp://sandbar/meta/Class/zorp.spaceboot
//
// An instance URI may end in ?format=json or ?format=markdown to read the instance in
// that format rather than in its class's own.
//
// The two shapes differ in their number of segments, so a class whose prefix is
// "meta" does not collide with the metamodel.
const uriBase = "mcp://sandbar/"

// Metamodel kinds in URIs.
const (
	MetaClass    = "Class"
	MetaProperty = "Property"
	MetaWorkflow = "WorkflowDefinition"
)

// ResourceRef is a parsed resource URI.
type ResourceRef struct {
	// MetaKind is set for metamodel objects: Class, Property or WorkflowDefinition.
	MetaKind string
	// Prefix and Kind name an instance's class, or a view's.
	Prefix, Kind string
	// App is set for an MCP Apps view (package apps): AppClass
	// (ui://sandbar/class/<prefix>/<Kind>) or AppBoard (apps.BoardURI).
	App string
	// Namespace is set for instances.
	Namespace string
	Name      string
	// Format is the format asked for in the URI's query, if any.
	Format string
}

// IsInstance reports whether the URI names an instance.
func (r ResourceRef) IsInstance() bool { return r.MetaKind == "" && !r.IsApp() }

// The kinds of MCP Apps view.
const (
	AppClass = "class"
	AppBoard = "board"
)

// IsApp reports whether the URI is an MCP Apps view's (package apps).
func (r ResourceRef) IsApp() bool { return r.App != "" }

// String formats the URI.
func (r ResourceRef) String() string {
	switch r.App {
	case AppClass:
		return apps.ClassURI(r.Prefix, r.Kind)
	case AppBoard:
		return apps.BoardURI
	}
	if r.IsInstance() {
		u := uriBase + r.Prefix + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
		if r.Format != "" {
			u += "?format=" + r.Format
		}
		return u
	}
	return uriBase + "meta/" + r.MetaKind + "/" + r.Name
}

// InstanceURI is the URI of an instance.
func InstanceURI(prefix, kind, namespace, name string) string {
	return ResourceRef{Prefix: prefix, Kind: kind, Namespace: namespace, Name: name}.String()
}

// MetaURI is the URI of a metamodel object.
func MetaURI(kind, name string) string { return ResourceRef{MetaKind: kind, Name: name}.String() }

var (
	prefixRE    = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)
	kindRE      = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	namespaceRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	nameRE      = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
)

// ParseURI reads a resource URI, refusing anything that is not an instance's, a
// metamodel object's or a view's.
func ParseURI(uri string) (ResourceRef, error) {
	if apps.IsURI(uri) {
		if uri == apps.BoardURI {
			return ResourceRef{App: AppBoard}, nil
		}
		prefix, kind, ok := apps.ParseClassURI(uri)
		if !ok || !prefixRE.MatchString(prefix) || !kindRE.MatchString(kind) {
			return ResourceRef{}, fmt.Errorf("%q: want %s or %s", uri, apps.ClassURI("<prefix>", "<Kind>"), apps.BoardURI)
		}
		return ResourceRef{App: AppClass, Prefix: prefix, Kind: kind}, nil
	}
	rest, ok := strings.CutPrefix(uri, uriBase)
	if !ok {
		return ResourceRef{}, fmt.Errorf("%q is not a Sandbar resource URI (they start with %s)", uri, uriBase)
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	format := ""
	if hasQuery {
		f, ok := strings.CutPrefix(query, "format=")
		if _, known := codec.ParseFormat(f); !ok || !known {
			return ResourceRef{}, fmt.Errorf("%q: the only query is ?format=json or ?format=markdown", uri)
		}
		format = f
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 3 && parts[0] == "meta" && format == "":
		switch parts[1] {
		case MetaClass, MetaProperty, MetaWorkflow:
		default:
			return ResourceRef{}, fmt.Errorf("%q: the metamodel kinds are Class, Property and WorkflowDefinition", uri)
		}
		if !nameRE.MatchString(parts[2]) {
			return ResourceRef{}, fmt.Errorf("%q: %q is not a valid name", uri, parts[2])
		}
		return ResourceRef{MetaKind: parts[1], Name: parts[2]}, nil
	case len(parts) == 4:
		switch {
		case !prefixRE.MatchString(parts[0]):
			return ResourceRef{}, fmt.Errorf("%q: %q is not a class prefix", uri, parts[0])
		case !kindRE.MatchString(parts[1]):
			return ResourceRef{}, fmt.Errorf("%q: %q is not a class kind", uri, parts[1])
		case !namespaceRE.MatchString(parts[2]):
			return ResourceRef{}, fmt.Errorf("%q: %q is not a namespace", uri, parts[2])
		case !nameRE.MatchString(parts[3]):
			return ResourceRef{}, fmt.Errorf("%q: %q is not a valid name", uri, parts[3])
		}
		return ResourceRef{Prefix: parts[0], Kind: parts[1], Namespace: parts[2], Name: parts[3], Format: format}, nil
	}
	return ResourceRef{}, fmt.Errorf("%q: want %s<prefix>/<Kind>/<namespace>/<name>, %smeta/<kind>/<name>, %s or %s", uri, uriBase, uriBase,
		apps.ClassURI("<prefix>", "<Kind>"), apps.BoardURI)
}

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

package instanceapi

import (
	"strings"

	"github.com/sandbar-dev/sandbar/internal/catalog"
)

const (
	// GroupSuffix follows a class's prefix in the API group of its instances.
	GroupSuffix = ".sandbar.dev"
	// Version is the API version of every generated instance API.
	Version = "v1"
	// CategoryAll is the kubectl category of every instance of every class.
	CategoryAll = "sandbar-instances"
)

// Names are the API names of a class's instances.
type Names struct {
	Group    string
	Version  string
	Kind     string
	ListKind string
	Plural   string
	Singular string
	// CRDName is <plural>.<group>.
	CRDName string
}

// NamesFor derives the instance API names of a class: group <prefix>.sandbar.dev,
// kind the class's kind, plural from the class's options or the English plural of kind.
func NamesFor(c *catalog.Class) Names {
	group := c.Prefix + GroupSuffix
	plural := c.InstanceAPIOptions.Plural
	if plural == "" {
		plural = Plural(c.Kind)
	}
	return Names{
		Group:    group,
		Version:  Version,
		Kind:     c.Kind,
		ListKind: c.Kind + "List",
		Plural:   plural,
		Singular: strings.ToLower(c.Kind),
		CRDName:  plural + "." + group,
	}
}

// Plural is the lower-case English plural of a kind: SpaceBoot -> spaceboots,
// Address -> addresses, Category -> categories.
func Plural(kind string) string {
	s := strings.ToLower(kind)
	switch {
	case s == "":
		return s
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "z"),
		strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsAny(s[len(s)-2:len(s)-1], "aeiou"):
		return s[:len(s)-1] + "ies"
	default:
		return s + "s"
	}
}

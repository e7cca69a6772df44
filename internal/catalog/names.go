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

package catalog

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

const (
	// GroupSuffix follows a class's prefix in the API group of its instances.
	GroupSuffix = ".sandbar.dev"
	// InstanceVersion is the API version of every generated instance API.
	InstanceVersion = "v1"
)

// ReservedPrefixes are the class prefixes whose API group Sandbar itself serves:
// "meta" would name meta.sandbar.dev, the metamodel's group. The Class CRD refuses them
// (a CEL rule), and the catalog reports a Class stored before that rule existed.
var ReservedPrefixes = []string{"meta"}

// reservedPrefixProblem is why a class cannot have its prefix, or nil.
func reservedPrefixProblem(prefix string) *Problem {
	if !slices.Contains(ReservedPrefixes, prefix) {
		return nil
	}
	return &Problem{Reason: metav1alpha1.ReasonInvalid, Message: fmt.Sprintf(
		"the prefix %q is reserved: its API group %s is Sandbar's own; choose another prefix", prefix, prefix+GroupSuffix)}
}

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
// They come from the Class's spec only, never from its status, which whoever may
// update classes/status could point at another API.
func NamesFor(c *Class) Names {
	group := c.Prefix + GroupSuffix
	plural := c.InstanceAPIOptions.Plural
	if plural == "" {
		plural = Plural(c.Kind)
	}
	return Names{
		Group:    group,
		Version:  InstanceVersion,
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
	if p, ok := asciiPlural(kind); ok {
		return p
	}
	return unicodePlural(kind)
}

// asciiPlural is Plural of an ASCII kind, made in one allocation (ok false: the
// kind is not ASCII).
func asciiPlural(kind string) (string, bool) {
	n := len(kind)
	for i := 0; i < n; i++ {
		if kind[i] >= utf8.RuneSelf {
			return "", false
		}
	}
	if n == 0 {
		return "", true
	}
	lower := func(c byte) byte {
		if 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	last, prev := lower(kind[n-1]), byte(0)
	if n > 1 {
		prev = lower(kind[n-2])
	}
	keep, suffix := n, "s"
	switch {
	case last == 's' || last == 'x' || last == 'z' || (last == 'h' && (prev == 'c' || prev == 's')):
		suffix = "es"
	case last == 'y' && n > 1 && !strings.ContainsRune("aeiou", rune(prev)):
		keep, suffix = n-1, "ies"
	}
	var b strings.Builder
	b.Grow(keep + len(suffix))
	for i := 0; i < keep; i++ {
		b.WriteByte(lower(kind[i]))
	}
	b.WriteString(suffix)
	return b.String(), true
}

// unicodePlural is Plural of any kind.
func unicodePlural(kind string) string {
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

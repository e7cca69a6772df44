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

// Package codec reads and writes instances as text: JSON, and Markdown with the
// slot values in YAML front matter and chosen string slots as sections. Writing then
// reading gives back the same instance, and reading then writing a document in the
// canonical form gives back the same document.
package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
	"github.com/sandbar-dev/sandbar/internal/catalog"
)

// Format is one way to write an instance as text.
type Format struct {
	Name     metav1alpha1.CodecFormat
	MIMEType string
	// Description says what a document of the format looks like, for a model.
	Description string
}

// Formats is every format, in the order tools list them: the one list that tool
// enums, resource URIs and the codec listing read.
var Formats = []Format{
	{Name: metav1alpha1.CodecJSON, MIMEType: "application/json",
		Description: "The attributes as a JSON object, or {\"metadata\": {...}, \"spec\": {...}}."},
	{Name: metav1alpha1.CodecMarkdown, MIMEType: "text/markdown",
		Description: "YAML front matter between --- lines with metadata and the slot values, then a \"# <field>\" section " +
			"for each of the class's section slots (see spec.codec.sections in sandbar_class_describe)."},
}

// FormatNames are the names of Formats, for a tool argument's enum.
func FormatNames() []string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f.Name)
	}
	return names
}

// ParseFormat reads a format's name; ok is false for a name not in Formats.
func ParseFormat(name string) (f metav1alpha1.CodecFormat, ok bool) {
	for _, f := range Formats {
		if string(f.Name) == name {
			return f.Name, true
		}
	}
	return "", false
}

// MIMEType of a format (JSON's for one not in Formats).
func MIMEType(f metav1alpha1.CodecFormat) string {
	for _, known := range Formats {
		if known.Name == f {
			return known.MIMEType
		}
	}
	return Formats[0].MIMEType
}

// SourceError is a problem in a source document, with where it is.
type SourceError struct {
	// Line is 1-based; 0 when the problem has no one line.
	Line int
	// Field is the slot the problem is about, if any.
	Field string
	Msg   string
}

func (e *SourceError) Error() string {
	var where []string
	if e.Line > 0 {
		where = append(where, "line "+strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		where = append(where, "field "+strconv.Quote(e.Field))
	}
	if len(where) == 0 {
		return e.Msg
	}
	return strings.Join(where, ", ") + ": " + e.Msg
}

// Document is an instance as text: its metadata (name, namespace, labels) and its
// slot values.
type Document struct {
	Metadata   map[string]any
	Attributes map[string]any
}

// EncodeMarkdown writes an instance: front matter with metadata.name and the slot
// values in slot order, then one "# <field>" section per section slot that has a value.
func EncodeMarkdown(c *catalog.Class, name string, attrs map[string]any) (string, error) {
	var b strings.Builder
	b.WriteString("---\n")
	if name != "" {
		fmt.Fprintf(&b, "metadata:\n  name: %s\n", name)
	}
	sections := map[string]bool{}
	for _, f := range c.Codec.Sections {
		sections[f] = true
	}
	for _, s := range c.Slots {
		v, ok := attrs[s.Field]
		if !ok || sections[s.Field] {
			continue
		}
		y, err := yaml.Marshal(map[string]any{s.Field: v})
		if err != nil {
			return "", err
		}
		b.Write(y)
	}
	b.WriteString("---\n")
	for _, f := range c.Codec.Sections {
		v, ok := attrs[f].(string)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n# %s\n\n%s\n", f, strings.TrimSpace(v))
	}
	return b.String(), nil
}

var heading = regexp.MustCompile(`^# (\S+)\s*$`)

// DecodeMarkdown reads a document written as EncodeMarkdown writes it. Errors say on
// which line and for which field.
func DecodeMarkdown(c *catalog.Class, src string) (*Document, error) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return nil, &SourceError{Line: 1, Msg: "a Markdown instance starts with a --- line that opens the front matter"}
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, &SourceError{Line: len(lines), Msg: "the front matter is not closed by a --- line"}
	}
	front := strings.Join(lines[1:end], "\n")
	var fm map[string]any
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
		return nil, yamlError(err, 1)
	}
	doc := &Document{Attributes: map[string]any{}}
	for k, v := range fm {
		if k == catalog.ReservedField {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, &SourceError{Line: lineOf(lines[1:end], k) + 1, Field: k, Msg: "metadata must be a mapping (name, namespace, labels)"}
			}
			doc.Metadata = m
			continue
		}
		if _, ok := c.Slot(k); !ok {
			return nil, &SourceError{Line: lineOf(lines[1:end], k) + 1, Field: k, Msg: fmt.Sprintf("not a slot of %s", c.Ident())}
		}
		doc.Attributes[k] = v
	}

	sections := map[string]bool{}
	for _, f := range c.Codec.Sections {
		sections[f] = true
	}
	var current string
	var body []string
	startLine := 0
	flush := func() error {
		if current == "" {
			if text := strings.TrimSpace(strings.Join(body, "\n")); text != "" {
				return &SourceError{Line: startLine, Msg: "text outside a section; start it with a \"# <field>\" heading"}
			}
			return nil
		}
		doc.Attributes[current] = strings.TrimSpace(strings.Join(body, "\n"))
		return nil
	}
	for i := end + 1; i < len(lines); i++ {
		if m := heading.FindStringSubmatch(lines[i]); m != nil {
			if err := flush(); err != nil {
				return nil, err
			}
			f := m[1]
			if !sections[f] {
				return nil, &SourceError{Line: i + 1, Field: f, Msg: fmt.Sprintf("not a section of %s; its sections are: %s", c.Ident(), strings.Join(c.Codec.Sections, ", "))}
			}
			if _, dup := doc.Attributes[f]; dup {
				return nil, &SourceError{Line: i + 1, Field: f, Msg: "given twice"}
			}
			current, body = f, nil
			continue
		}
		if current == "" && strings.TrimSpace(lines[i]) != "" && startLine == 0 {
			startLine = i + 1
		}
		body = append(body, lines[i])
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return doc, nil
}

// DecodeJSON reads an instance as JSON: its attributes, or an object with "spec"
// (the attributes) and "metadata".
func DecodeJSON(src string) (*Document, error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(src), &doc); err != nil {
		var se *json.SyntaxError
		if ok := asSyntax(err, &se); ok {
			line, col := position(src, se.Offset)
			return nil, &SourceError{Line: line, Msg: fmt.Sprintf("not valid JSON: %v (column %d)", err, col)}
		}
		return nil, &SourceError{Msg: "must be a JSON object: " + err.Error()}
	}
	spec, hasSpec := doc["spec"].(map[string]any)
	if !hasSpec {
		return &Document{Attributes: doc}, nil
	}
	m, _ := doc["metadata"].(map[string]any)
	return &Document{Attributes: spec, Metadata: m}, nil
}

// EncodeJSON writes an instance as JSON, as DecodeJSON reads it.
func EncodeJSON(name string, attrs map[string]any) (string, error) {
	b, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"name": name}, "spec": attrs}, "", "  ")
	return string(b), err
}

func asSyntax(err error, target **json.SyntaxError) bool {
	se, ok := err.(*json.SyntaxError)
	if ok {
		*target = se
	}
	return ok
}

func position(text string, offset int64) (line, col int) {
	line, col = 1, 1
	for i, r := range text {
		if int64(i) >= offset-1 {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

var yamlLine = regexp.MustCompile(`line (\d+): ?`)

// yamlError turns a YAML error into a SourceError whose line counts from the start
// of the document (offset is the line the YAML starts after).
func yamlError(err error, offset int) error {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		line = n + offset
		msg = yamlLine.ReplaceAllString(msg, "")
	}
	msg = strings.TrimPrefix(strings.TrimPrefix(msg, "error converting YAML to JSON: "), "yaml: ")
	return &SourceError{Line: line, Msg: "front matter: " + msg}
}

// lineOf finds the line (1-based) of a top-level key.
func lineOf(lines []string, key string) int {
	for i, l := range lines {
		if bytes.HasPrefix([]byte(l), []byte(key+":")) {
			return i + 1
		}
	}
	return 0
}

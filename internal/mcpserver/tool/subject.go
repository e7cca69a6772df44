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

package tool

import (
	"context"
	"sync"
)

// Subject is what a request acts on, as the code that acts learns it: the class and
// instance of an entity call, the WorkflowProcess of a task. Telemetry and audit
// report it; nothing decides on it.
type Subject struct {
	mu sync.Mutex
	s  Object
}

// Object names what a request acts on; empty fields are unknown.
type Object struct {
	// Class is the name of the instance's class.
	Class string
	// Namespace and Name name the instance.
	Namespace, Name string
	// ProcessNamespace and ProcessName name the WorkflowProcess; Started is true when
	// the request created it.
	ProcessNamespace, ProcessName string
	Started                       bool
	// Policies are the call policies' decisions on the request (NotePolicy).
	Policies []string
}

type subjectKey struct{}

// WithSubject gives a request a Subject that the code serving it fills.
func WithSubject(ctx context.Context) (context.Context, *Subject) {
	s := &Subject{}
	return context.WithValue(ctx, subjectKey{}, s), s
}

// Note records what a request acts on, if the request has a Subject.
func Note(ctx context.Context, f func(o *Object)) {
	s, _ := ctx.Value(subjectKey{}).(*Subject)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.s)
}

// NoteInstance records the class and instance a request acts on.
func NoteInstance(ctx context.Context, class, namespace, name string) {
	Note(ctx, func(o *Object) { o.Class, o.Namespace, o.Name = class, namespace, name })
}

// NoteProcess records the WorkflowProcess a request acts on.
func NoteProcess(ctx context.Context, namespace, name string) {
	Note(ctx, func(o *Object) { o.ProcessNamespace, o.ProcessName = namespace, name })
}

// NoteStarted records the WorkflowProcess a request created.
func NoteStarted(ctx context.Context, namespace, name string) {
	Note(ctx, func(o *Object) { o.ProcessNamespace, o.ProcessName, o.Started = namespace, name, true })
}

// Object is what was recorded.
func (s *Subject) Object() Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s
}

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

// Package catalog holds the resolved metamodel: an immutable, versioned snapshot of
// Classes (with their effective slots), Properties, WorkflowDefinitions and the public
// data of ServiceAccounts. Reconcilers build snapshots with the pure functions of this
// package and publish them in a Store; the MCP server reads the newest snapshot
// without locks and waits on Store.Watch to learn of newer ones.
package catalog

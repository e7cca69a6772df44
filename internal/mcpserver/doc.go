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

// Package mcpserver assembles the MCP server of one manager replica from the rooms
// in its subpackages and serves it over Streamable HTTP (on the go-sdk):
//
//	edge       the HTTP mux, the middleware chain every transport goes through, health
//	access     who a request is (bearer tokens) and what it may do (tools, namespaces)
//	tasks      the MCP Tasks protocol adapter, a shim until the SDK supports Tasks
//	process    the one service for WorkflowProcesses, used by tasks and the verbs
//	tool       how a tool is declared, its arguments decoded, its errors mapped
//	verbs      what the tools do, grouped by domain, and the views they answer with
//	resources  instances and metamodel objects as resources, subscriptions, completion
//	prompts    workflow definitions as prompts
//	redact     no credential leaves the server
//	card       the server card and the catalogs that point to it (public documents)
//
// The server derives its tools, resources and prompts from the catalog whenever it
// changes, and reads the informer caches, so every replica serves it.
package mcpserver

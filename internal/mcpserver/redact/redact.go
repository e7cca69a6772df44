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

// Package redact keeps credentials out of what the server sends: tool results,
// resource contents and prompts pass through it, and whatever looks like a token, a
// key hash or a private key is replaced.
package redact

import (
	"context"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbar-dev/sandbar/internal/apikey"
)

// Redacted replaces what looks like a credential in what the server sends.
const Redacted = "[REDACTED]"

// credentialPatterns match values that must never reach a model's context, even if
// someone stored them in an instance: this server's bearer tokens and key hashes,
// and common key formats.
var credentialPatterns = []*regexp.Regexp{
	regexp.MustCompile(`\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}`), // bcrypt hash
	apikey.TokenPattern, // Sandbar bearer token
	regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/:-]{20,}=*`),                                   // any bearer token
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`), // PEM private key
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),            // JWT
	regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`),                                                // AWS access key id
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`),                                             // GitHub token
	regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`),                                             // Slack token
	regexp.MustCompile(`\bsk-(ant-)?[A-Za-z0-9_-]{20,}`),                                             // API keys of the sk- form
}

// String replaces every credential-looking part of s.
func String(s string) string {
	for _, re := range credentialPatterns {
		s = re.ReplaceAllString(s, Redacted)
	}
	return s
}

// Value walks a JSON-like value and redacts its strings.
func Value(v any) any {
	switch x := v.(type) {
	case string:
		return String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Value(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Value(e)
		}
		return out
	}
	return v
}

// Middleware scrubs tool results, resource contents and prompts before they leave.
func Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.CallToolResult:
			out := *r
			out.Content = Contents(r.Content)
			if r.StructuredContent != nil {
				out.StructuredContent = Value(r.StructuredContent)
			}
			return &out, nil
		case *mcp.ReadResourceResult:
			out := *r
			out.Contents = make([]*mcp.ResourceContents, len(r.Contents))
			for i, c := range r.Contents {
				cc := *c
				cc.Text = String(c.Text)
				out.Contents[i] = &cc
			}
			return &out, nil
		case *mcp.GetPromptResult:
			out := *r
			out.Messages = make([]*mcp.PromptMessage, len(r.Messages))
			for i, m := range r.Messages {
				mm := *m
				if t, ok := m.Content.(*mcp.TextContent); ok {
					mm.Content = &mcp.TextContent{Text: String(t.Text)}
				}
				out.Messages[i] = &mm
			}
			return &out, nil
		}
		return res, nil
	}
}

// Contents redacts the text of contents.
func Contents(cs []mcp.Content) []mcp.Content {
	out := make([]mcp.Content, len(cs))
	for i, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			tt := *t
			tt.Text = String(t.Text)
			out[i] = &tt
			continue
		}
		out[i] = c
	}
	return out
}

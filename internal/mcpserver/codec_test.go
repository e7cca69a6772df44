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

package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"

	"github.com/sandbar-dev/sandbar/internal/mcpserver/resources"
)

const reviewTemplate = `---
metadata:
  name: REVIEW
title: Best boots in the sector
rating: 5
boot: BOOT
---

# body

Fits all eight tentacles.

Even in hard vacuum.
`

// A class whose codec is markdown: create from Markdown, read it back as the same
// document, find it as Markdown, and get told where a bad document is wrong.
func TestMarkdownCodecRoundTrip(t *testing.T) {
	g := NewWithT(t)
	cs := connect(t, mcpURL, token, nil)
	name := unique("first-review")
	boot := unique("moonwalker")
	newBoot(t, "default", boot, map[string]any{"name": "Moonwalker"}) // the review's boot slot refers to it
	reviewDoc := strings.NewReplacer("REVIEW", name, "BOOT", boot).Replace(reviewTemplate)
	res := callTool(t, cs, "sandbar_entity_create", map[string]any{"class": "zorp/Review", "format": "markdown", "source": reviewDoc})
	g.Expect(res.IsError).To(BeFalse(), text(res))

	uri := resources.InstanceURI("zorp", "Review", "default", name)
	var read *mcp.ReadResourceResult
	g.Eventually(func() error {
		var err error
		read, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		return err
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Expect(read.Contents[0].MIMEType).To(Equal("text/markdown"))
	g.Expect(read.Contents[0].Text).To(Equal(reviewDoc), "markdown -> instance -> markdown gives the same document")

	res = callTool(t, cs, "sandbar_entity_find", map[string]any{"class": "zorp/Review", "format": "markdown"})
	g.Expect(res.IsError).To(BeFalse(), text(res))
	var found struct {
		Items []map[string]any `json:"items"`
	}
	g.Expect(json.Unmarshal([]byte(text(res)), &found)).To(Succeed())
	g.Expect(found.Items).To(ContainElement(HaveKeyWithValue("source", reviewDoc)))

	res = callTool(t, cs, "sandbar_codec_list", nil)
	g.Expect(text(res)).To(ContainSubstring(`"zorp/Review"`))

	for _, tc := range []struct{ src, want string }{
		{"---\ntitle: Meh\nrating: six\n---\n", `slot "rating": expected integer, got string "six"`},
		{"---\ntitle: Meh\nrating: 3\ncolour: red\n---\n", `source (markdown): line 4, field "colour": not a slot of zorp/Review`},
		{"---\ntitle: Meh\nrating: 3\n---\n# verdict\nfine\n", `line 5, field "verdict": not a section of zorp/Review`},
	} {
		res = callTool(t, cs, "sandbar_entity_create", map[string]any{"class": "zorp/Review", "format": "markdown", "source": tc.src})
		g.Expect(res.IsError).To(BeTrue())
		g.Expect(text(res)).To(ContainSubstring(tc.want))
	}
}

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
	"testing"

	. "github.com/onsi/gomega"

	"github.com/sandbar-dev/sandbar/internal/mcpserver"
)

func TestNoAuthIsRefusedOffLoopback(t *testing.T) {
	g := NewWithT(t)
	for _, addr := range []string{":8080", "0.0.0.0:8080", "10.1.2.3:8080", "example.com:80"} {
		err := mcpserver.Options{NoAuth: true, BindAddress: addr, ToolSurface: mcpserver.SurfaceBoth, NameStyle: mcpserver.StyleUnderscore}.Validate()
		g.Expect(err).To(MatchError(ContainSubstring("--mcp-insecure-no-auth needs --mcp-bind-address on loopback")), addr)
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080"} {
		g.Expect(mcpserver.Options{NoAuth: true, BindAddress: addr, ToolSurface: mcpserver.SurfaceBoth, NameStyle: mcpserver.StyleUnderscore}.Validate()).To(Succeed(), addr)
	}
}

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

package card

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// MaxAge is how long a client or a cache may keep a document without asking again
// (the extension's advice); after it, the ETag lets it ask cheaply.
const MaxAge = time.Hour

// CardHandler serves the card.
func (d *Documents) CardHandler() http.Handler {
	return d.handler(MediaType, func(origin string) any { return d.Card(origin) })
}

// AICatalogHandler serves the AI Catalog.
func (d *Documents) AICatalogHandler() http.Handler {
	return d.handler(AICatalogType, func(origin string) any { return d.catalog(origin, "1.0") })
}

// MCPCatalogHandler serves the MCP Catalog of the earlier drafts.
func (d *Documents) MCPCatalogHandler() http.Handler {
	return d.handler("application/json", func(origin string) any { return d.catalog(origin, "draft") })
}

// handler serves a public document: GET and HEAD (405 otherwise; OPTIONS is a CORS
// preflight), to any origin (the document is public and grants nothing), with an
// ETag that a conditional GET revalidates (304) and a Cache-Control of MaxAge.
func (d *Documents) handler(mediaType string, doc func(origin string) any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match")
		h.Set("Access-Control-Expose-Headers", "ETag")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed: this document is read with GET", http.StatusMethodNotAllowed)
			return
		}
		origin, err := d.origin(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		body, err := json.Marshal(doc(origin))
		if err != nil {
			http.Error(w, "the document could not be written", http.StatusInternalServerError)
			return
		}
		sum := sha256.Sum256(body)
		h.Set("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
		h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(MaxAge/time.Second)))
		h.Set("Content-Type", mediaType)
		h.Set("X-Content-Type-Options", "nosniff")
		// ServeContent answers HEAD, If-None-Match (304) and ranges.
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
}

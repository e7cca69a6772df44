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

package builtin

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metav1alpha1 "github.com/sandbar-dev/sandbar/api/v1alpha1"
)

// A job whose result holds many items (an export) keeps them outside its process's
// status, which etcd bounds: in chunks, each a Secret of the process's namespace
// (instance attributes may be sensitive, and Secrets are the kind clusters guard
// most) holding up to maxChunkBytes of gzip-compressed JSON. Each chunk is owned by
// the process, so that the garbage collector deletes it with the process, and
// labelled with the process's name. A chunk is named after the digest of what it
// holds, and written before the status that lists it: a step done again after its
// status write was lost writes the same chunk again (found, not duplicated), and a
// chunk no status lists is never read. The status keeps the summary (Stored).

const (
	// LabelResultOf on a result chunk names the WorkflowProcess it belongs to.
	LabelResultOf = "meta.sandbar.dev/result-of"
	// ResultChunkType is the type of the Secrets that hold result chunks.
	ResultChunkType corev1.SecretType = "meta.sandbar.dev/result-chunk"
	// DefaultMaxStoredBytes is the default cap on the (uncompressed) bytes of one
	// process's stored result.
	DefaultMaxStoredBytes = 64 << 20
	// maxChunkBytes bounds the compressed payload of one chunk, well within etcd's
	// object size; maxChunkRawBytes its JSON, which a reader holds uncompressed.
	maxChunkBytes    = 900 << 10
	maxChunkRawBytes = 8 << 20
	// chunkKey is the chunk's key in its Secret's data.
	chunkKey = "items.json.gz"
)

// ResultStore writes and reads result chunks with the manager's own rights: an
// account needs none on Secrets.
type ResultStore struct {
	// Client creates chunks.
	Client client.Client
	// Reader reads them from the API server (the manager's cache holds no chunks).
	Reader client.Reader
	// MaxBytes caps the uncompressed bytes one process may store (0: no cap).
	MaxBytes int64
}

// Stored is the summary of a stored result, as a process's status keeps it under
// the result's "stored" key.
type Stored struct {
	// Kind is where the chunks are: Secret.
	Kind string `json:"kind"`
	// Chunks are the chunks, in order.
	Chunks []Chunk `json:"chunks"`
	// Bytes is the JSON of all items, uncompressed; StoredBytes the chunks' payloads
	// as stored.
	Bytes       int64 `json:"bytes"`
	StoredBytes int64 `json:"storedBytes"`
	// Digest is the SHA-256 of the chunks' digests, in order.
	Digest string `json:"digest"`
}

// Chunk is one stored chunk: the SHA-256 of its items' JSON (which names its
// Secret), how many items it holds, and its bytes uncompressed and as stored.
type Chunk struct {
	Digest      string `json:"d"`
	Items       int    `json:"n"`
	Bytes       int64  `json:"b"`
	StoredBytes int64  `json:"z"`
}

// Count is how many items the stored result holds.
func (s *Stored) Count() int {
	n := 0
	for _, c := range s.Chunks {
		n += c.Items
	}
	return n
}

// add appends chunks and recomputes the totals.
func (s *Stored) add(chunks ...Chunk) {
	s.Chunks = append(s.Chunks, chunks...)
	s.sum()
}

// truncate keeps the first n chunks.
func (s *Stored) truncate(n int) {
	if n < len(s.Chunks) {
		s.Chunks = s.Chunks[:n]
		s.sum()
	}
}

func (s *Stored) sum() {
	s.Kind = "Secret"
	s.Bytes, s.StoredBytes = 0, 0
	h := sha256.New()
	for _, c := range s.Chunks {
		s.Bytes += c.Bytes
		s.StoredBytes += c.StoredBytes
		h.Write([]byte(c.Digest))
	}
	s.Digest = hex.EncodeToString(h.Sum(nil))
}

// StoredOf is the summary of a process's stored result; nil when its result holds
// its items itself (or none), or a summary this store did not write.
func StoredOf(result []byte) *Stored {
	var r struct {
		Stored *Stored `json:"stored"`
	}
	if len(result) == 0 || !bytes.Contains(result, []byte(`"stored"`)) || json.Unmarshal(result, &r) != nil || r.Stored == nil {
		return nil
	}
	if !isDigest(r.Stored.Digest) {
		return nil
	}
	for _, c := range r.Stored.Chunks {
		if !isDigest(c.Digest) || c.Items < 0 || c.Bytes < 0 || c.Bytes > maxChunkRawBytes {
			return nil
		}
	}
	return r.Stored
}

// isDigest reports whether s is a SHA-256 in hex.
func isDigest(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// storedIn is the summary a job's result so far holds, empty when none.
func storedIn(r Result) *Stored {
	s := &Stored{}
	if v, ok := r["stored"]; ok {
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, s)
	}
	s.sum()
	return s
}

// ChunkName is the name of a process's chunk of a digest.
func ChunkName(process, digest string) string {
	return process + "-r-" + digest[:32]
}

// encoded is a chunk ready to write.
type encoded struct {
	Chunk
	gz []byte
}

// encode turns items into chunks of at most maxChunkBytes compressed each, splitting
// them where one would be larger.
func encode(items []any) ([]encoded, error) {
	raw, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = zw.Write(raw)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() > maxChunkBytes || len(raw) > maxChunkRawBytes {
		if len(items) == 1 {
			return nil, failf("one item is larger than a chunk holds (%d KiB compressed, %d MiB of JSON)", maxChunkBytes>>10, maxChunkRawBytes>>20)
		}
		half := len(items) / 2
		a, err := encode(items[:half])
		if err != nil {
			return nil, err
		}
		b, err := encode(items[half:])
		return append(a, b...), err
	}
	sum := sha256.Sum256(raw)
	return []encoded{{Chunk: Chunk{Digest: hex.EncodeToString(sum[:]), Items: len(items), Bytes: int64(len(raw)),
		StoredBytes: int64(buf.Len())}, gz: buf.Bytes()}}, nil
}

// ProcessRef is what a chunk needs of its process: where it lives, and its uid for
// the owner reference.
type ProcessRef struct {
	Namespace, Name string
	UID             types.UID
}

// write stores items as chunks of the process p, after the ones of have, and
// returns them. It fails the job, writing nothing, when the result would grow past
// the store's cap, or when fits refuses the summary the result would then have.
func (s *ResultStore) write(ctx context.Context, p ProcessRef, have *Stored, items []any, fits func(next *Stored) error) ([]Chunk, error) {
	chunks, err := encode(items)
	if err != nil {
		return nil, err
	}
	next := &Stored{Chunks: slices.Clone(have.Chunks)}
	for _, c := range chunks {
		next.Chunks = append(next.Chunks, c.Chunk)
	}
	next.sum()
	if s.MaxBytes > 0 && next.Bytes > s.MaxBytes {
		return nil, failf("the export is larger than %s, the most one process may store (--max-stored-result-bytes); "+
			"nothing more was stored: export one class at a time, or ask an admin to raise the limit", sizeOf(s.MaxBytes))
	}
	if err := fits(next); err != nil {
		return nil, err
	}
	out := make([]Chunk, 0, len(chunks))
	for _, c := range chunks {
		if err := s.put(ctx, p, c); err != nil {
			return nil, err
		}
		out = append(out, c.Chunk)
	}
	return out, nil
}

// put creates a chunk's Secret; one that exists already (written by an attempt
// whose status write was lost) is the same chunk, if the same process owns it.
func (s *ResultStore) put(ctx context.Context, p ProcessRef, c encoded) error {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace, Name: ChunkName(p.Name, c.Digest),
			Labels: map[string]string{LabelResultOf: p.Name, metav1alpha1.LabelManagedBy: metav1alpha1.ManagedByValue},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: metav1alpha1.GroupVersion.String(), Kind: "WorkflowProcess",
				Name: p.Name, UID: p.UID}},
		},
		Type: ResultChunkType,
		Data: map[string][]byte{chunkKey: c.gz},
	}
	err := s.Client.Create(ctx, sec)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var have corev1.Secret
	if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(sec), &have); err != nil {
		return err
	}
	if !ownedBy(&have, p) {
		return failf("the result chunk %s exists but does not belong to this process", sec.Name)
	}
	return nil
}

func ownedBy(sec *corev1.Secret, p ProcessRef) bool {
	if sec.Type != ResultChunkType || sec.Labels[LabelResultOf] != p.Name {
		return false
	}
	for _, o := range sec.OwnerReferences {
		if o.Kind == "WorkflowProcess" && o.UID == p.UID && o.Name == p.Name {
			return true
		}
	}
	return false
}

// ReadChunk reads the i-th chunk of a process's stored result with r and checks it
// against the summary: its owner, size and digest. It returns the chunk's items as
// JSON.
func ReadChunk(ctx context.Context, r client.Reader, p ProcessRef, st *Stored, i int) ([]json.RawMessage, error) {
	if i < 0 || i >= len(st.Chunks) {
		return nil, fmt.Errorf("the result has no chunk %d", i)
	}
	c := st.Chunks[i]
	var sec corev1.Secret
	if err := r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ChunkName(p.Name, c.Digest)}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("chunk %d of the result of %s is missing", i, p.Name)
		}
		return nil, err
	}
	if !ownedBy(&sec, p) {
		return nil, fmt.Errorf("chunk %d of the result of %s does not belong to it", i, p.Name)
	}
	zr, err := gzip.NewReader(bytes.NewReader(sec.Data[chunkKey]))
	if err != nil {
		return nil, fmt.Errorf("chunk %d of the result of %s is damaged: %w", i, p.Name, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, c.Bytes+1))
	sum := sha256.Sum256(raw)
	if err != nil || int64(len(raw)) != c.Bytes || hex.EncodeToString(sum[:]) != c.Digest {
		return nil, fmt.Errorf("chunk %d of the result of %s is damaged: it does not match its digest", i, p.Name)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) != c.Items {
		return nil, fmt.Errorf("chunk %d of the result of %s is damaged: it does not hold %d items", i, p.Name, c.Items)
	}
	return items, nil
}

// sizeOf is a byte count for people.
func sizeOf(n int64) string {
	switch {
	case n >= 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MiB"
	case n >= 1<<10:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<10)), ".0") + " KiB"
	}
	return fmt.Sprintf("%d bytes", n)
}

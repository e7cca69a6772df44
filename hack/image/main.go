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

// Command image assembles the manager image without a container engine or a registry
// (`make image`): an empty base and one layer holding the static manager binary, the
// CA certificates the binary carries, and the nonroot user (65532) as distroless has it.
// It writes an OCI image layout with an index of every platform, and a docker-archive
// tarball of one platform that `podman load`, `docker load`, `ctr images import` and
// `kind load image-archive` read. Every byte follows from the binaries and the flags:
// timestamps are the given epoch, owners and modes are fixed, entries are sorted, so two
// builds of one commit give the same digests.
//
// With -layer it writes only the layer, as a plain tar, for the Dockerfile to unpack.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// nonroot is the user and group the manager runs as, as in distroless's nonroot images.
const nonroot = 65532

// options are the inputs of a build; nothing else reaches the image.
type options struct {
	out      string            // directory: oci/ (the layout) and sandbar-<os>-<arch>.tar
	tag      string            // the reference the layout and the tarball name
	version  string            // org.opencontainers.image.version
	revision string            // org.opencontainers.image.revision
	source   string            // org.opencontainers.image.source
	epoch    time.Time         // every timestamp: SOURCE_DATE_EPOCH
	binaries map[string]string // platform ("linux/amd64") to the manager binary built for it
	platform string            // the platform of the tarball
}

// result names what a build wrote.
type result struct {
	index    v1.Hash            // digest of the image index
	images   map[string]v1.Hash // platform to the digest of its image manifest
	platform []string           // the platforms, in index order
	archive  string             // path of the tarball
}

func main() {
	var o options
	var epoch int64
	var layer string
	binaries := map[string]string{}
	flag.StringVar(&o.out, "out", "bin/image", "directory to write the OCI layout (oci/) and the tarball into")
	flag.StringVar(&o.tag, "tag", "ghcr.io/sandbar-dev/sandbar:dev", "image reference to record in the layout and the tarball")
	flag.StringVar(&o.version, "version", "dev", "version label")
	flag.StringVar(&o.revision, "revision", "", "revision label (the git commit)")
	flag.StringVar(&o.source, "source", "https://github.com/sandbar-dev/sandbar", "source label")
	flag.Int64Var(&epoch, "epoch", 0, "Unix time of every timestamp in the image (SOURCE_DATE_EPOCH)")
	flag.Func("binary", "os/arch=path of the manager built for that platform (repeatable)", func(v string) error {
		platform, path, ok := strings.Cut(v, "=")
		if !ok || strings.Count(platform, "/") != 1 {
			return fmt.Errorf("want os/arch=path, got %q", v)
		}
		binaries[platform] = path
		return nil
	})
	flag.StringVar(&o.platform, "archive-platform", "linux/amd64", "platform of the loadable tarball")
	flag.StringVar(&layer, "layer", "", "write only the layer of the one -binary, as a plain tar, to this file")
	flag.Parse()
	o.epoch = time.Unix(epoch, 0).UTC()
	o.binaries = binaries

	if err := run(o, layer); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(o options, layer string) error {
	if layer != "" {
		if len(o.binaries) != 1 {
			return fmt.Errorf("-layer takes exactly one -binary")
		}
		for _, path := range o.binaries {
			return writeLayerTar(layer, path, o.epoch)
		}
	}
	r, err := build(o)
	if err != nil {
		return err
	}
	fmt.Printf("index %s %s\n", r.index, filepath.Join(o.out, "oci"))
	for _, p := range r.platform {
		fmt.Printf("image %s %s\n", r.images[p], p)
	}
	fmt.Printf("archive %s (%s)\n", r.archive, o.platform)
	return nil
}

// build writes the OCI layout of every platform and the tarball of o.platform.
func build(o options) (*result, error) {
	ref, err := name.NewTag(o.tag)
	if err != nil {
		return nil, err
	}
	if _, ok := o.binaries[o.platform]; !ok {
		return nil, fmt.Errorf("no -binary for the archive platform %s", o.platform)
	}
	r := &result{images: map[string]v1.Hash{}}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var archived v1.Image
	for _, p := range slices.Sorted(maps.Keys(o.binaries)) {
		img, err := image(o, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if r.images[p], err = img.Digest(); err != nil {
			return nil, err
		}
		goos, goarch, _ := strings.Cut(p, "/")
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: goarch}},
		})
		r.platform = append(r.platform, p)
		if p == o.platform {
			archived = img
		}
	}
	if r.index, err = idx.Digest(); err != nil {
		return nil, err
	}

	// A fresh layout each time: blobs of an earlier build would linger otherwise.
	dir := filepath.Join(o.out, "oci")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := l.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.Name(),
	})); err != nil {
		return nil, err
	}

	r.archive = filepath.Join(o.out, fmt.Sprintf("sandbar-%s.tar", strings.ReplaceAll(o.platform, "/", "-")))
	if err := tarball.WriteToFile(r.archive, ref, archived); err != nil {
		return nil, err
	}
	return r, nil
}

// image is the manager image of one platform: one layer on an empty base.
func image(o options, platform string) (v1.Image, error) {
	data, err := layerTar(o.binaries[platform], o.epoch)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: o.epoch}, CreatedBy: "make image", Comment: "the manager, CA certificates, the nonroot user"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, _ = strings.Cut(platform, "/")
	cf.Created = v1.Time{Time: o.epoch}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", nonroot, nonroot),
		Entrypoint: []string{"/manager"},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.source":   o.source,
			"org.opencontainers.image.version":  o.version,
			"org.opencontainers.image.revision": o.revision,
		},
	}
	return mutate.ConfigFile(img, cf)
}

// entry is one file or directory of the layer.
type entry struct {
	name string // without a leading slash; directories end in "/"
	mode int64
	uid  int
	body []byte
}

// entries are the layer's contents, sorted by name, parents before children.
func entries(binary []byte) []entry {
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: caBundle()},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonroot},
		{name: "manager", mode: 0o755, body: binary},
		{name: "tmp/", mode: 0o1777},
	}
}

// caBundle is the PEM form of the roots the manager carries
// (golang.org/x/crypto/x509roots/fallback, imported by cmd), at the path where Go and
// most TLS libraries look first, so that the file and the binary trust the same
// authorities. Roots with a constraint (a distrust-after date; one in the current
// bundle) are left out: a PEM file cannot state the constraint, and trusting such a root
// without it would trust what it issued after that date.
func caBundle() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint == nil {
			_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
		}
	}
	return b.Bytes()
}

// layerTar is the uncompressed layer: entries with fixed owners, modes and mtime.
func layerTar(binaryPath string, mtime time.Time) ([]byte, error) {
	binary, err := os.ReadFile(binaryPath)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries(binary) {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: mtime,
			Format:  tar.FormatUSTAR,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeLayerTar(path, binaryPath string, mtime time.Time) error {
	data, err := layerTar(binaryPath, mtime)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

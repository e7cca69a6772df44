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

package main

import (
	"archive/tar"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testOptions builds into dir from two stand-in binaries: the assembly does not look
// inside the binary, and building ./cmd for two platforms would take minutes.
func testOptions(t *testing.T, dir string) options {
	t.Helper()
	binaries := map[string]string{}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		path := filepath.Join(t.TempDir(), "manager")
		if err := os.WriteFile(path, []byte("manager for "+p), 0o600); err != nil {
			t.Fatal(err)
		}
		binaries[p] = path
	}
	return options{
		out:      dir,
		tag:      "ghcr.io/sandbar-dev/sandbar:v1.2.3",
		version:  "v1.2.3",
		revision: "0123456789abcdef0123456789abcdef01234567",
		source:   "https://github.com/sandbar-dev/sandbar",
		epoch:    time.Unix(1700000000, 0).UTC(),
		binaries: binaries,
		platform: "linux/amd64",
	}
}

func TestBuildIsReproducible(t *testing.T) {
	first := testOptions(t, t.TempDir())
	a, err := build(first)
	if err != nil {
		t.Fatal(err)
	}
	// The second build reads copies of the binaries from other paths, into another
	// directory: only the bytes and the flags may matter.
	second := testOptions(t, t.TempDir())
	b, err := build(second)
	if err != nil {
		t.Fatal(err)
	}
	if a.index != b.index {
		t.Errorf("index digests differ: %s and %s", a.index, b.index)
	}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		if a.images[p] != b.images[p] {
			t.Errorf("%s: image digests differ: %s and %s", p, a.images[p], b.images[p])
		}
	}

	// What was written is what was computed.
	idx, err := layout.ImageIndexFromPath(filepath.Join(first.out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Digest != a.index ||
		top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1.2.3" {
		t.Fatalf("index.json = %+v, want the image index %s tagged v1.2.3", top.Manifests, a.index)
	}

	// A newer epoch changes every digest.
	later := testOptions(t, t.TempDir())
	later.epoch = later.epoch.Add(time.Second)
	c, err := build(later)
	if err != nil {
		t.Fatal(err)
	}
	if c.index == a.index {
		t.Error("a build with another SOURCE_DATE_EPOCH has the same index digest")
	}
}

func TestImageContent(t *testing.T) {
	o := testOptions(t, t.TempDir())
	r, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(filepath.Join(o.out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	platforms, err := idx.ImageIndex(r.index)
	if err != nil {
		t.Fatal(err)
	}
	im, err := platforms.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range im.Manifests {
		got = append(got, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := platforms.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, img, d.Platform, o)
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(got, want) {
		t.Errorf("index platforms = %v, want %v", got, want)
	}

	// The tarball holds the amd64 image: the same config, so the same image ID once loaded.
	loaded, err := tarball.ImageFromPath(r.archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	amd64, err := platforms.Image(r.images["linux/amd64"])
	if err != nil {
		t.Fatal(err)
	}
	gotID, _ := loaded.ConfigName()
	wantID, _ := amd64.ConfigName()
	if gotID != wantID {
		t.Errorf("tarball image ID = %s, want %s (the amd64 image)", gotID, wantID)
	}
}

// checkImage checks the config and the one layer of the image of one platform.
func checkImage(t *testing.T, img v1.Image, platform *v1.Platform, o options) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != platform.OS || cf.Architecture != platform.Architecture {
		t.Errorf("config platform %s/%s, index says %s/%s", cf.OS, cf.Architecture, platform.OS, platform.Architecture)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532", cf.Config.User)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/manager"}) {
		t.Errorf("Entrypoint = %q, want [/manager]", cf.Config.Entrypoint)
	}
	if !cf.Created.Equal(o.epoch) {
		t.Errorf("Created = %s, want %s", cf.Created, o.epoch)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   o.source,
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.revision,
	} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()

	type file struct {
		mode     int64
		uid, gid int
	}
	want := map[string]file{
		"etc/":                              {0o755, 0, 0},
		"etc/group":                         {0o644, 0, 0},
		"etc/passwd":                        {0o644, 0, 0},
		"etc/ssl/":                          {0o755, 0, 0},
		"etc/ssl/certs/":                    {0o755, 0, 0},
		"etc/ssl/certs/ca-certificates.crt": {0o644, 0, 0},
		"home/":                             {0o755, 0, 0},
		"home/nonroot/":                     {0o700, 65532, 65532},
		"manager":                           {0o755, 0, 0},
		"tmp/":                              {0o1777, 0, 0},
	}
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		w, ok := want[h.Name]
		if !ok {
			t.Errorf("unexpected entry %s", h.Name)
			continue
		}
		if h.Mode != w.mode || h.Uid != w.uid || h.Gid != w.gid {
			t.Errorf("%s: mode %o uid %d gid %d, want mode %o uid %d gid %d", h.Name, h.Mode, h.Uid, h.Gid, w.mode, w.uid, w.gid)
		}
		if !h.ModTime.Equal(o.epoch) {
			t.Errorf("%s: mtime %s, want %s", h.Name, h.ModTime, o.epoch)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch h.Name {
		case "manager":
			if string(body) != "manager for "+platform.OS+"/"+platform.Architecture {
				t.Errorf("/manager of %s holds %q", platform.Architecture, body)
			}
		case "etc/passwd":
			if !strings.Contains(string(body), "\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n") {
				t.Errorf("/etc/passwd has no nonroot user:\n%s", body)
			}
		case "etc/group":
			if !strings.Contains(string(body), "\nnonroot:x:65532:\n") {
				t.Errorf("/etc/group has no nonroot group:\n%s", body)
			}
		case "etc/ssl/certs/ca-certificates.crt":
			checkCertificates(t, body)
		}
	}
	if !slices.IsSorted(names) || len(names) != len(want) {
		t.Errorf("layer entries %v, want the %d expected, sorted", names, len(want))
	}
}

// checkCertificates checks that the bundle is PEM certificates a TLS client can use.
func checkCertificates(t *testing.T, bundle []byte) {
	t.Helper()
	n := 0
	for rest := bundle; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			t.Errorf("certificate %d: %v", n, err)
		}
		n++
	}
	if n < 50 {
		t.Errorf("ca-certificates.crt holds %d certificates, want the roots of a trust store", n)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(bundle) {
		t.Error("ca-certificates.crt does not load as a cert pool")
	}
}

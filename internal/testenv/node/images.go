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

package node

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"time"

	"archive/tar"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// pauseImage writes the sandbox image (PauseImage) to out as a tarball: one layer
// with the pause binary, run as nobody.
func pauseImage(binary, out string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	ref, err := name.NewTag(PauseImage)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

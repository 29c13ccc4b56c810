//go:build manifests

// In make test-manifests (beside the manifests it runs in): it builds
// infertop once for linux, tens of seconds cold.

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds the image as make image does (infertop built from the
// module for this machine's architecture, so that the test can run it),
// as a tarball and as an OCI layout, and reads both back with
// go-containerregistry's readers: one image, run as 65532:65532, its
// entrypoint the static binary of the version asked for, the CA bundle
// the build machine's, /tmp writable by the user, the labels set.
func TestImage(t *testing.T) {
	const ca = "/etc/ssl/certs/ca-certificates.crt"
	bundle, err := os.ReadFile(ca)
	if err != nil {
		t.Skipf("no CA bundle on this machine (%v): .ci/run installs ca-certificates", err)
	}
	dir := t.TempDir()
	c := Config{Dir: "../..", Version: "v9.8.7-test", Arch: runtime.GOARCH, CACerts: ca, Name: "registry.example/infertop:t1",
		Out: filepath.Join(dir, "image.tar")}
	id, err := Build(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(c.Name)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(c.Out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := img.ConfigName(); err != nil || got != id {
		t.Fatalf("the tarball's image is %v (%v), the build said %v", got, err, id)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/infertop"}) || cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("user %q, entrypoint %q, platform %s/%s", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	if !slices.Contains(cf.Config.Env, "SSL_CERT_FILE="+ca) || !slices.Contains(cf.Config.Env, "HOME=/tmp") {
		t.Errorf("env %q", cf.Config.Env)
	}
	if l := cf.Config.Labels; l["org.opencontainers.image.version"] != c.Version || l["org.opencontainers.image.source"] != Source {
		t.Errorf("labels %v", l)
	}
	files := extract(t, img)
	exe, ok := files["infertop"]
	if !ok || exe.Mode != 0o755 || exe.Typeflag != tar.TypeReg {
		t.Fatalf("no executable /infertop: %+v", exe)
	}
	if got, ok := files["etc/ssl/certs/ca-certificates.crt"]; !ok || !bytes.Equal(got.body, bundle) {
		t.Errorf("the CA bundle is not the build machine's (%d bytes against %d)", len(got.body), len(bundle))
	}
	if tmp := files["tmp"]; tmp.Typeflag != tar.TypeDir || tmp.Mode != 0o1777 {
		t.Errorf("/tmp: %+v", tmp)
	}
	if !strings.Contains(string(files["etc/passwd"].body), ":65532:65532:") {
		t.Errorf("/etc/passwd names no user 65532: %q", files["etc/passwd"].body)
	}
	// The binary is static (it runs with nothing else in the image) and
	// says the version it was built with.
	bin := filepath.Join(dir, "infertop")
	if err := os.WriteFile(bin, exe.body, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), c.Version) {
		t.Errorf("the image's infertop --version: %v, %q", err, out)
	}
	if b, err := os.ReadFile(bin); err == nil && bytes.Contains(b, []byte("/lib64/ld-linux")) {
		t.Error("the binary asks for a dynamic loader: not static")
	}

	// The same binary and bundle as an OCI layout: the same image, its ID
	// and layers digest for digest, whatever the format or the day.
	c.Binary, c.Out = bin, filepath.Join(dir, "layout")
	again, err := Build(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(c.Out)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("the layout's index: %+v, %v", im, err)
	}
	limg, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	lid, err := limg.ConfigName()
	if err != nil || lid != id || again != id || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != tag.String() {
		t.Errorf("the layout holds %v (%v, %v), built %v; the tarball's %v", lid, err, im.Manifests[0].Annotations, again, id)
	}
	if a, b := layerDigests(t, img), layerDigests(t, limg); !slices.Equal(a, b) || len(a) != 1 {
		t.Errorf("the tarball's layers %v, the layout's %v", a, b)
	}
	// A second build into the same layout replaces it.
	if _, err := Build(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if idx, err := layout.ImageIndexFromPath(c.Out); err != nil {
		t.Fatal(err)
	} else if im, err := idx.IndexManifest(); err != nil || len(im.Manifests) != 1 {
		t.Errorf("a second build into the layout: %+v, %v", im, err)
	}
}

// TestImageBadInput: a missing CA bundle, a bundle with no certificate, a
// bad name, a folder that is not a layout and a binary that is no ELF
// executable are each refused in a line that says what to do.
func TestImageBadInput(t *testing.T) {
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Skipf("no CA bundle on this machine (%v): .ci/run installs ca-certificates", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "infertop")
	notPEM := filepath.Join(dir, "empty.crt")
	for _, f := range []string{bin, notPEM} {
		if err := os.WriteFile(f, []byte("\x7fELF"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	busy := filepath.Join(dir, "busy")
	if err := os.MkdirAll(filepath.Join(busy, "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	ok := Config{Binary: bin, Version: "v1", Arch: "amd64", CACerts: "/etc/ssl/certs/ca-certificates.crt", Name: "infertop:t", Out: filepath.Join(dir, "i.tar")}
	for _, c := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.CACerts = filepath.Join(dir, "none.crt") }, "install ca-certificates"},
		{func(c *Config) { c.CACerts = notPEM }, "holds no PEM certificate"},
		{func(c *Config) { c.Name = "Not A Name" }, "--name"},
		{func(c *Config) { c.Out = busy }, "not an OCI image layout"},
		{func(c *Config) { c.Binary = script }, "no ELF executable"},
	} {
		cfg := ok
		c.change(&cfg)
		_, err := Build(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v; want one line with %q", cfg, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(busy, "mine")); err != nil {
		t.Errorf("the refused folder was touched: %v", err)
	}
}

func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Hash
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

type file struct {
	tar.Header
	body []byte
}

// extract reads img's file system back (its layers flattened).
func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]file{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = file{*h, b} // Extract may drop a folder's slash
	}
}

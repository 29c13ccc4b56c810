// Command image builds infertop's container image without a Docker
// daemon, with go-containerregistry: on an empty base, one layer holding
// the static binary (CGO_ENABLED=0, -trimpath, the version as make build
// sets it), the build machine's CA bundle (so agents reach https
// endpoints), a passwd and group naming the non-root user 65532 it runs
// as, and /tmp, the one place it writes (an emptyDir under Kubernetes'
// read-only root). The output is a docker-save tarball (OUT ending in
// .tar: docker load, crane push, kind load image-archive take it) or an
// OCI image layout (a folder: crane push, skopeo copy oci:DIR take it):
//
//	go run ./tools/image --version v1.2.3 --name ghcr.io/infertop/infertop:latest --out infertop-image.tar
//	make image                                   # the same, from the Makefile's variables
//
// Nothing is pushed: no registry is needed to build. The same binary and
// CA bundle give the same image, digest for digest (every time in it is
// the Unix epoch).
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed parts: the deploy/kubernetes manifests run it as
// this user, with an emptyDir on /tmp.
const (
	// User is the numeric user and group the image runs as (distroless's
	// nonroot): numeric, so that Kubernetes' runAsNonRoot can check it.
	User       = "65532:65532"
	Entrypoint = "/infertop"
	// CAPath is where the bundle goes: where Go's crypto/x509 looks first
	// on Linux, and SSL_CERT_FILE names it for anything else.
	CAPath = "/etc/ssl/certs/ca-certificates.crt"
	// Source is the OCI source label's value.
	Source = "https://github.com/infertop/infertop"
)

// Config is what one build takes.
type Config struct {
	// Binary is a static linux infertop built already ("": built from
	// Dir, the module's root, for Arch with Version).
	Binary, Dir string
	// Version is the binary's (main.version) and the version label's.
	Version string
	// Arch is the image's GOARCH (the OS is linux).
	Arch string
	// CACerts is the build machine's CA bundle, copied in.
	CACerts string
	// Name is the image's reference (registry/repository:tag), recorded
	// in the tarball's manifest or the layout's index.
	Name string
	// Out is the tarball (.tar) or OCI layout folder written.
	Out string
}

func main() {
	var c Config
	flag.StringVar(&c.Binary, "binary", "", "a static linux infertop binary to put in (default: build one from --dir)")
	flag.StringVar(&c.Dir, "dir", ".", "the infertop module's root, built when --binary is not given")
	flag.StringVar(&c.Version, "version", "dev", "the version: the binary's (-X main.version) and the image's label")
	flag.StringVar(&c.Arch, "arch", "amd64", "the image's architecture (GOARCH; the OS is linux)")
	flag.StringVar(&c.CACerts, "cacerts", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle copied into the image (Debian: apt-get install ca-certificates)")
	flag.StringVar(&c.Name, "name", "ghcr.io/infertop/infertop:latest", "the image's name and tag")
	flag.StringVar(&c.Out, "out", "infertop-image.tar", "where to write it: NAME.tar (docker save's format) or a folder (an OCI image layout)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "image: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	id, err := Build(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s (image ID %s) written to %s\n", c.Name, id, c.Out)
}

// Build builds the image c describes and writes it to c.Out; it returns
// the image's ID, its config's digest (what docker images shows): the
// same in either format (a tarball keeps no manifest, so a registry's
// manifest digest is the pusher's).
func Build(ctx context.Context, c Config) (v1.Hash, error) {
	ref, err := name.NewTag(c.Name)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("--name %q: %w", c.Name, err)
	}
	ca, err := os.ReadFile(c.CACerts)
	if errors.Is(err, fs.ErrNotExist) {
		return v1.Hash{}, fmt.Errorf("no CA bundle at %s (--cacerts): install ca-certificates, or name another bundle", c.CACerts)
	} else if err != nil {
		return v1.Hash{}, fmt.Errorf("--cacerts: %w", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return v1.Hash{}, fmt.Errorf("--cacerts %s holds no PEM certificate", c.CACerts)
	}
	bin := c.Binary
	if bin == "" {
		tmp, err := os.MkdirTemp("", "infertop-image-")
		if err != nil {
			return v1.Hash{}, fmt.Errorf("image: %w", err)
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, "infertop")
		if err := buildBinary(ctx, c.Dir, c.Arch, c.Version, bin); err != nil {
			return v1.Hash{}, err
		}
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("--binary: %w", err)
	}
	if !bytes.HasPrefix(exe, []byte("\x7fELF")) {
		return v1.Hash{}, fmt.Errorf("--binary %s is no ELF executable: build it with GOOS=linux CGO_ENABLED=0", bin)
	}
	img, err := Image(exe, ca, c.Arch, c.Version)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := write(img, ref, c.Out); err != nil {
		return v1.Hash{}, err
	}
	return img.ConfigName()
}

// buildBinary builds infertop from dir for linux/arch into out, as make
// build does: static (CGO_ENABLED=0), -trimpath, the version in
// main.version.
func buildBinary(ctx context.Context, dir, arch, version, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building infertop for linux/%s: %w: %s", arch, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// epoch is every time in the image: the same inputs, the same digest.
var epoch = time.Unix(0, 0).UTC()

// Image is infertop's image: exe (a static linux binary for arch) and
// the CA bundle ca in one layer on an empty base, run as User.
func Image(exe, ca []byte, arch, version string) (v1.Image, error) {
	fsys, err := rootFS(exe, ca)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(fsys)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: the layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: epoch},
		CreatedBy: "tools/image: infertop " + version + ", its CA bundle, user " + User}})
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: epoch}
	cf.Config.User, cf.Config.Entrypoint, cf.Config.WorkingDir = User, []string{Entrypoint}, "/tmp"
	// HOME on /tmp: the defaults under it (infertop ssh's host key) land
	// where a read-only root still writes.
	cf.Config.Env = []string{"PATH=/", "HOME=/tmp", "SSL_CERT_FILE=" + CAPath}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "infertop",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.licenses": "MIT",
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return img, nil
}

// rootFS is the layer's tar: the binary, the CA bundle, the user's
// passwd and group lines, and /tmp (sticky, writable by all).
func rootFS(exe, ca []byte) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	uid, gid := 65532, 65532
	entries := []struct {
		name string
		mode int64
		body []byte
		dir  bool
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CAPath, "/"), mode: 0o644, body: ca},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: strings.TrimPrefix(Entrypoint, "/"), mode: 0o755, body: exe},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		}
		if e.name == "tmp/" {
			h.Uid, h.Gid = uid, gid
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image: %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("image: %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return b.Bytes(), nil
}

// write writes img as ref to out: a docker-save tarball when out ends in
// .tar, else an OCI image layout (a folder that is one already is
// replaced; any other is refused).
func write(img v1.Image, ref name.Tag, out string) error {
	if strings.HasSuffix(out, ".tar") {
		if err := tarball.WriteToFile(out, ref, img); err != nil {
			return fmt.Errorf("--out %s: %w", out, err)
		}
		return nil
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(out, "oci-layout")); err != nil {
			return fmt.Errorf("--out %s: a folder that is not an OCI image layout: name another, or NAME.tar", out)
		}
		if err := os.RemoveAll(out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()})); err != nil {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	return nil
}

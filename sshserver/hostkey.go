package sshserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	gossh "golang.org/x/crypto/ssh"
)

// ensureHostKey creates the host key at path (ed25519, mode 0600, its
// public half beside it as path.pub) when there is none. A directory is
// created, private (0700), only where none exists: the key library would
// chmod an existing one to 0700 too (the current directory, for a bare
// file name), so the key is made here and the library only reads it.
func ensureHostKey(path string) error {
	if path == "" {
		return nil // for the library to refuse
	}
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or for the library to say why it cannot be read
	}
	if dir := filepath.Dir(path); dir != "." {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("create %s: %w", dir, err)
			}
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := pem.Encode(f, block); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if err := os.WriteFile(path+".pub", gossh.MarshalAuthorizedKey(sshPub), 0o644); err != nil {
		return fmt.Errorf("write %s.pub: %w", path, err)
	}
	return nil
}

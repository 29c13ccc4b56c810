// Package promtest runs a real Prometheus (Debian's package) for a test,
// on 127.0.0.1, scraping every 200 ms what the test's configuration
// names; the test skips itself where no prometheus is installed.
package promtest

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Start runs prometheus with scrapeConfigs (the YAML list under
// scrape_configs:, indented by two) and any more flags, waits until it is
// ready and returns its base URL; it is stopped when the test ends.
func Start(t testing.TB, scrapeConfigs string, flags ...string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	conf := "global:\n  scrape_interval: 200ms\nscrape_configs:\n" + scrapeConfigs
	if err := os.WriteFile(dir+"/prometheus.yml", []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := append([]string{"--config.file=" + dir + "/prometheus.yml", "--storage.tsdb.path=" + dir + "/data",
		"--web.listen-address=" + addr, "--log.level=warn"}, flags...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus never became ready")
		}
	}
}

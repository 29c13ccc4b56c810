package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/infertop/infertop/load"
	"github.com/infertop/infertop/probe"
)

var rpsRE = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
var vegetaRE = regexp.MustCompile(`Requests\s+\[total, rate, throughput\]\s+\d+,\s+[0-9.]+,\s+([0-9.]+)`)

// peer runs a peer tool and reads its request rate from its output; the
// note says why there is none.
func peer(name string, args []string, re *regexp.Regexp) (float64, string) {
	path, err := exec.LookPath(name)
	if err != nil {
		return 0, "not installed"
	}
	outb, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		return 0, "failed: " + strings.TrimSpace(string(outb))
	}
	m := re.FindSubmatch(outb)
	if m == nil {
		return 0, "no rate in its output"
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v, ""
}

func requestGeneration(out *bytes.Buffer, d time.Duration, conc int) error {
	srv := minimalServer()
	defer srv.Close()
	url := srv.URL + "/v1/infer"
	s, err := engineRun(probe.Config{URL: url, Model: "m", API: probe.Generic, MaxConns: conc * 2},
		load.Knobs{Concurrency: conc, PromptTokens: 4, OutputTokens: 1}, load.Length{}, d, false)
	if err != nil {
		return err
	}
	infertop := float64(s.TotalCompleted) / s.Elapsed.Seconds()
	dir, err := os.MkdirTemp("", "infertop-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	secs := strconv.Itoa(int(d.Seconds()))
	body := `{"model":"m","input":"hi","max_tokens":1}`
	bodyFile, luaFile := filepath.Join(dir, "body.json"), filepath.Join(dir, "post.lua")
	os.WriteFile(bodyFile, []byte(body), 0o644)
	os.WriteFile(luaFile, []byte("wrk.method = \"POST\"\nwrk.body = '"+body+"'\nwrk.headers[\"Content-Type\"] = \"application/json\"\n"), 0o644)
	hey, heyNote := peer("hey", []string{"-z", secs + "s", "-c", strconv.Itoa(conc), "-m", "POST", "-T", "application/json", "-d", body, url}, rpsRE)
	wrk, wrkNote := peer("wrk", []string{"-t2", "-c" + strconv.Itoa(conc), "-d" + secs + "s", "-s", luaFile, url}, rpsRE)
	vegeta, vegNote := vegetaRun(url, conc, secs, bodyFile)
	fmt.Fprintf(out, "## 1. Request generation\n\nA minimal JSON server in the bench, no streaming, concurrency %d, %s each, the server sharing the cores.\n\n", conc, d)
	fmt.Fprintf(out, "| tool | req/s | infertop ÷ tool |\n|---|---:|---:|\n| infertop | %.0f | 1.00 |\n", infertop)
	for _, p := range []struct {
		name, note string
		v          float64
	}{{"hey", heyNote, hey}, {"wrk", wrkNote, wrk}, {"vegeta", vegNote, vegeta}} {
		if p.v > 0 {
			fmt.Fprintf(out, "| %s | %.0f | %.2f |\n", p.name, p.v, infertop/p.v)
		} else {
			fmt.Fprintf(out, "| %s | — | %s |\n", p.name, p.note)
		}
	}
	out.WriteString("\n")
	return nil
}

func vegetaRun(url string, conc int, secs, bodyFile string) (float64, string) {
	path, err := exec.LookPath("vegeta")
	if err != nil {
		return 0, "not installed"
	}
	attack := exec.Command(path, "attack", "-rate=0", "-max-workers="+strconv.Itoa(conc), "-workers="+strconv.Itoa(conc), "-duration="+secs+"s",
		"-body="+bodyFile, "-header=Content-Type: application/json")
	attack.Stdin = strings.NewReader("POST " + url + "\n")
	results, err := attack.Output()
	if err != nil {
		return 0, "failed: " + err.Error()
	}
	report := exec.Command(path, "report")
	report.Stdin = bytes.NewReader(results)
	rep, err := report.Output()
	if err != nil {
		return 0, "report failed"
	}
	m := vegetaRE.FindSubmatch(rep)
	if m == nil {
		return 0, "no rate in its report"
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v, ""
}

package engines

import (
	"slices"
	"strings"
)

// part is which sample of a family a name is.
type part uint8

const (
	pValue  part = iota // a counter's or a gauge's sample
	pBucket             // a histogram's _bucket
	pSum                // its _sum
	pCount              // its _count
	pFamily             // a histogram family's own name, as client_model names it
)

// target is one metric of one table a sample's name fills.
type target struct {
	table, metric uint16
	part          part
}

// index maps every sample name of every table, in its canonical form
// (canon), to the metrics it fills. It is built once and only read.
var index = buildIndex()

func buildIndex() map[string][]target {
	idx := map[string][]target{}
	add := func(name string, t target) {
		k := string(canon(nil, []byte(name)))
		idx[k] = append(idx[k], t)
	}
	for ti, t := range tables {
		for mi, m := range t.metrics {
			at := func(p part) target { return target{table: uint16(ti), metric: uint16(mi), part: p} }
			if m.field.isHist() || m.sumOf {
				add(m.name, at(pFamily))
				add(m.name+"_bucket", at(pBucket))
				add(m.name+"_sum", at(pSum))
				add(m.name+"_count", at(pCount))
				continue
			}
			add(m.name, at(pValue))
			if m.field.isCounter() {
				add(m.name+"_total", at(pValue))
			}
		}
	}
	return idx
}

// canon appends a sample's name in the index's form to dst: the
// OpenMetrics value escaping ("U__" names) undone, then every colon an
// underscore. A scraper that negotiated escaping=underscores, or an
// engine that left colons (SGLang moved from "sglang:" to "sglang_"),
// then reads as the same family. A name that is not ASCII is no family
// of any table: it comes back as is, found nowhere.
func canon(dst, name []byte) []byte {
	if len(name) > 3 && string(name[:3]) == "U__" {
		return unescape(dst, name[3:])
	}
	n := len(dst)
	dst = append(dst, name...)
	for j, c := range dst[n:] {
		if c == ':' {
			dst[n+j] = '_'
		}
	}
	return dst
}

// unescape undoes OpenMetrics' value escaping of a name (after its
// "U__"): "__" is "_", "_3a_" is the code point 0x3a; every other byte is
// itself.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' {
			dst = append(dst, c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '_' {
			dst = append(dst, '_')
			i++
			continue
		}
		end := i + 1
		r := 0
		for end < len(s) && end-i <= 6 && hexDigit(s[end]) >= 0 {
			r = r<<4 | hexDigit(s[end])
			end++
		}
		if end == i+1 || end >= len(s) || s[end] != '_' || r >= 0x80 {
			return append(dst, 0xff) // malformed or not ASCII: no family's
		}
		if r == ':' {
			r = '_'
		}
		dst = append(dst, byte(r))
		i = end
	}
	return dst
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// lookup is the metrics a sample's name fills (nil for none).
func lookup(buf *[128]byte, name []byte) []target {
	if len(name) > 120 {
		return nil // longer than any table's name in any form
	}
	return index[string(canon(buf[:0], name))]
}

// Wanted says whether a sample or a family of this name is one some
// table reads (a counter with or without _total, a histogram's family or
// its _bucket, _sum or _count, in any escaping): filter a page or a
// query's result with it before parsing.
func Wanted(name string) bool {
	var buf [128]byte
	return len(lookup(&buf, []byte(name))) > 0
}

// Names is every family any table reads, as engines expose them: a
// counter with and without _total (Python's client adds it, TGI's Rust
// exporter does not), a gauge, a histogram by its family name (its
// samples add _bucket, _sum and _count), and a name with colons also with
// underscores (as SGLang and scrapers that escape them write it).
// Sorted; for a PromQL __name__ regular expression.
func Names() []string {
	var out []string
	for _, t := range tables {
		for _, m := range t.metrics {
			ns := []string{m.name}
			if m.field.isCounter() && !m.sumOf {
				ns = append(ns, m.name+"_total")
			}
			for _, n := range ns {
				out = append(out, n)
				if strings.Contains(n, ":") {
					out = append(out, strings.ReplaceAll(n, ":", "_"))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

package report

import (
	"strings"
	"testing"

	"github.com/infertop/infertop/load"
)

// TestCacheResetsLine: nothing when no reset was asked; the resets and
// the last refusal, its control bytes sanitised, when some were.
func TestCacheResetsLine(t *testing.T) {
	var b strings.Builder
	writeCacheResets(&b, load.CacheResets{})
	if b.Len() != 0 {
		t.Fatalf("no resets: %q", b.String())
	}
	writeCacheResets(&b, load.CacheResets{Done: 3, Failed: 1, Last: "/flush_cache: HTTP 400: pending\x1b[2J"})
	got := b.String()
	if !strings.Contains(got, "reset before 3 of the phases") || !strings.Contains(got, "1 refused, the last: /flush_cache: HTTP 400: pending") || strings.Contains(got, "\x1b") {
		t.Fatalf("%q", got)
	}
}

package probe

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{4,}`),
	regexp.MustCompile(`(?i)(basic\s+)[A-Za-z0-9+/=]{4,}`),
	regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{6,}`),
	regexp.MustCompile(`(?i)((?:api[_-]?key|token|secret|password|passwd|signature|credential)["']?\s*[:=]\s*["']?)[^\s"',}&;]{4,}`),
}

// Redact removes the given secrets and anything that looks like a credential
// (bearer tokens, sk- keys, key=value pairs) from s, and shortens it to at
// most max runes, so an error message can be shown or written safely.
func Redact(s string, max int, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, "${1}[REDACTED]")
	}
	s = strings.Join(strings.Fields(s), " ")
	if max > 0 && utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max-1]) + "…"
	}
	return s
}

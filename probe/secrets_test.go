package probe

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestURLPasswordRedacted: a URL's password goes out as Basic auth; a
// body that echoes the header, its base64 alone or the password never
// carries them out of the client.
func TestURLPasswordRedacted(t *testing.T) {
	secrets := secretsOf(Config{URL: "http://alice:hunter22@host:8000/v1"})
	b64 := base64.StdEncoding.EncodeToString([]byte("alice:hunter22"))
	for _, echo := range []string{"Authorization: Basic " + b64, "bad credentials " + b64, "password hunter22 refused"} {
		got := Redact(echo, 0, secrets...)
		if strings.Contains(got, "hunter22") || strings.Contains(got, b64) {
			t.Errorf("%q came out as %q", echo, got)
		}
	}
	if got := Redact("got Basic dXNlcjpwYXNz back", 0); strings.Contains(got, "dXNlcjpwYXNz") {
		t.Errorf("a Basic credential not known in advance: %q", got)
	}
}

// TestRedactURLQuery: every query parameter that may hold a credential
// is redacted (presigned URLs' signatures too); the rest stay.
func TestRedactURLQuery(t *testing.T) {
	raw := "https://u:p@host/metrics?password=a1&sig=b2&X-Amz-Signature=c3&X-Amz-Credential=d4&auth=e5&api_key=f6&job=vllm"
	got := RedactURL(raw)
	for _, leak := range []string{"a1", "b2", "c3", "d4", "e5", "f6", "u:p"} {
		if strings.Contains(got, leak) {
			t.Errorf("%q is in %q", leak, got)
		}
	}
	if !strings.Contains(got, "job=vllm") {
		t.Errorf("an ordinary parameter was lost: %q", got)
	}
	// The same keys in free text (an error that quotes a URL not passed
	// through RedactURL, a body that echoes one).
	text := Redact(`GET "https://b.s3/x?X-Amz-Signature=c3c3c3&X-Amz-Credential=d4d4d4&passwd=g7g7g7": 403`, 0)
	for _, leak := range []string{"c3c3c3", "d4d4d4", "g7g7g7"} {
		if strings.Contains(text, leak) {
			t.Errorf("%q is in %q", leak, text)
		}
	}
}

// TestEncodedSecretsRedacted: a server that echoes what it was sent
// percent-encoded (both hex cases), JSON-quoted or in base64 carries
// none of it out of the client (issue 40, item 14: "Basic%20...%3D"
// reached stdout, the JSON, the HTML and the requests log).
func TestEncodedSecretsRedacted(t *testing.T) {
	cfg := Config{URL: "http://alice:pa%2Fss=rd+1@host:8000/v1", APIKey: "sk-key/with+odd=chars",
		Header: map[string][]string{"X-Token": {"tok en&more=1"}}}
	secrets := secretsOf(cfg)
	lowerHex := regexp.MustCompile(`%[0-9A-F]{2}`)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pa/ss=rd+1"))
	for _, plain := range []string{"pa/ss=rd+1", "sk-key/with+odd=chars", "tok en&more=1", basic} {
		for _, echo := range []string{url.QueryEscape(plain), url.PathEscape(plain), lowerHex.ReplaceAllStringFunc(url.QueryEscape(plain), strings.ToLower),
			base64.StdEncoding.EncodeToString([]byte(plain)), base64.RawURLEncoding.EncodeToString([]byte(plain))} {
			if got := Redact("echo: "+echo+" end", 0, secrets...); strings.Contains(got, echo) {
				t.Errorf("%q encoded as %q came out as %q", plain, echo, got)
			}
		}
	}
}

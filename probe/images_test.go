package probe

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image/png"
	"regexp"
	"strings"
	"testing"
)

func TestParseImageSize(t *testing.T) {
	if w, h, err := ParseImageSize(" 640X480 "); err != nil || w != 640 || h != 480 {
		t.Fatalf("%d %d %v", w, h, err)
	}
	for _, bad := range []string{"", "640", "0x10", "10x", "x10", "5000x10", "axb"} {
		if _, _, err := ParseImageSize(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestImages: chat and Responses carry each request's images as image
// parts of data: URLs holding PNGs of the size asked for, drawn in turn
// from a pool the seed makes the same; other kinds are refused.
func TestImages(t *testing.T) {
	body := BodyOptions{Images: 2, ImageW: 60, ImageH: 30, ImageSeed: 7}
	urlRE := regexp.MustCompile(`data:image/png;base64,([A-Za-z0-9+/=]+)`)
	for _, tc := range []struct {
		kind Kind
		part string
	}{{OpenAIChat, `{"image_url":{"url":"data:image/png;base64,`}, {OpenAIResponses, `{"image_url":"data:image/png;base64,`}} {
		cfg := Config{URL: "http://127.0.0.1:1/v1", API: tc.kind, Body: body}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		pr, err := newProtocol(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := pr.body("m", Request{Prompt: "describe", MaxTokens: 4})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(b), tc.part) != 2 || !strings.Contains(string(b), `"describe"`) {
			t.Fatalf("%s: %.300s", tc.kind, b)
		}
		m := urlRE.FindStringSubmatch(string(b))
		raw, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil || img.Bounds().Dx() != 60 || img.Bounds().Dy() != 30 {
			t.Fatalf("%s: %v %v", tc.kind, img.Bounds(), err)
		}
	}
	one, _ := makePNG(60, 30, 7)
	again, _ := makePNG(60, 30, 7)
	other, _ := makePNG(60, 30, 8)
	if !bytes.Equal(one, again) || bytes.Equal(one, other) {
		t.Error("the images are not the seed's")
	}
	c, err := New(Config{URL: "http://127.0.0.1:1/v1/chat/completions", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := c.ImageBytes(); n <= 0 || n > 2*int64(len(one))*4 {
		t.Errorf("%d bytes a request", n)
	}
	for _, bad := range []Config{{API: Anthropic, Body: body}, {API: OpenAIChat, Body: BodyOptions{Images: 1}}, {API: OpenAIChat, Body: BodyOptions{Images: MaxImages + 1, ImageW: 1, ImageH: 1}}} {
		var se *SettingError
		if err := bad.Validate(); !errors.As(err, &se) || se.Setting != SettingImages {
			t.Errorf("%+v: %v", bad.Body, err)
		}
	}
}

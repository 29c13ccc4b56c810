package sim

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"testing"
)

// TestImageTokens: an image in a chat or Responses request adds a token
// per 28×28 pixels to its prompt, read from the data: URL's header; an
// image by link is refused.
func TestImageTokens(t *testing.T) {
	s, url := startSim(t, testParams())
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 100, 56))); err != nil {
		t.Fatal(err)
	}
	data := "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
	chat := func(img string) string {
		return fmt.Sprintf(`{"model":"sim-llama-8b","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":%q}}]}]}`, img)
	}
	for _, body := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"sim-llama-8b","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat/completions", chat(data)},
		{"/v1/responses", fmt.Sprintf(`{"model":"sim-llama-8b","max_output_tokens":1,"input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":%q}]}]}`, data)},
	} {
		if resp, b := post(t, url+body.path, body.body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	rec := s.Records()
	const img = 4 * 2 // 100×56 pixels: 4×2 patches of 28
	if rec[1].PromptTokens != rec[0].PromptTokens+img || rec[2].PromptTokens != 1+img {
		t.Errorf("prompt tokens %d without the image, %d with it (chat), %d (Responses)", rec[0].PromptTokens, rec[1].PromptTokens, rec[2].PromptTokens)
	}
	if resp, b := post(t, url+"/v1/chat/completions", chat("https://example.com/cat.png")); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an image by link: %d %s", resp.StatusCode, b)
	}
}

package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	_ "image/jpeg" // the image formats a request's data: URL may hold
	_ "image/png"
	"strings"
)

// Images in a request (chat's image_url parts, the Responses API's
// input_image) are prompt tokens: a vision encoder's patches, one token
// per 28×28 pixels (Qwen2-VL's 14-pixel patches merged two by two), so
// the prefill charges each image by its size. Only the image's header is
// read, from the start of its data: URL.

// imagePatch is the pixels a side of one image token covers.
const imagePatch = 28

// maxImageTokens bounds one image's tokens, as a model's processor caps
// an image's pixels.
const maxImageTokens = 16384

var errImageURL = errors.New("the sim takes images as data: URLs of base64 PNG or JPEG")

// imageTokens counts the tokens of a request's images (0: none).
func imageTokens(kind apiKind, req *genRequest) (int, error) {
	var msgs []json.RawMessage
	switch kind {
	case kindChat:
		msgs = req.Messages
	case kindResponses:
		if json.Unmarshal(req.Input, &msgs) != nil {
			return 0, nil // a string: no images
		}
	default:
		return 0, nil
	}
	n := 0
	for _, raw := range msgs {
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		var parts []struct {
			Type     string          `json:"type"`
			ImageURL json.RawMessage `json:"image_url"`
		}
		if json.Unmarshal(raw, &m) != nil || json.Unmarshal(m.Content, &parts) != nil {
			continue
		}
		for _, p := range parts {
			if p.Type != "image_url" && p.Type != "input_image" {
				continue
			}
			var url string
			if json.Unmarshal(p.ImageURL, &url) != nil { // chat's {"url": ...}
				var u struct {
					URL string `json:"url"`
				}
				_ = json.Unmarshal(p.ImageURL, &u)
				url = u.URL
			}
			k, err := oneImageTokens(url)
			if err != nil {
				return 0, err
			}
			n += k
		}
	}
	return n, nil
}

// oneImageTokens reads an image's size from its data: URL's header.
func oneImageTokens(url string) (int, error) {
	_, data, ok := strings.Cut(url, ";base64,")
	if !ok || !strings.HasPrefix(url, "data:image/") {
		return 0, errImageURL
	}
	head := data[:min(len(data), 4096)] // a PNG's size is in its first 24 bytes, a JPEG's within its first segments
	head = head[:len(head)/4*4]
	raw, err := base64.StdEncoding.DecodeString(head)
	if err != nil {
		return 0, errImageURL
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return 0, errImageURL
	}
	w, h := (cfg.Width+imagePatch-1)/imagePatch, (cfg.Height+imagePatch-1)/imagePatch
	return min(w*h, maxImageTokens), nil
}

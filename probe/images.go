package probe

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
)

// Synthetic images for vision models: each request carries
// BodyOptions.Images PNGs of ImageW×ImageH, made in memory with the
// standard library from a seed, sent as image parts (chat's image_url,
// the Responses API's input_image) as data: URLs.

// SettingImages names the images' options in a SettingError.
const SettingImages = "images"

// The images' bounds: a request of MaxImages images of MaxImageSide² is
// already past what vision models take.
const (
	MaxImages    = 16
	MaxImageSide = 4096
	// imagePoolSize is how many distinct images a run makes: requests
	// draw theirs from the pool in turn (a server's image cache may hold
	// them; a new image per request would cost the client milliseconds).
	imagePoolSize = 16
)

// ParseImageSize reads WxH ("512x512").
func ParseImageSize(s string) (w, h int, err error) {
	ws, hs, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	w, errW := strconv.Atoi(ws)
	h, errH := strconv.Atoi(hs)
	if !ok || errW != nil || errH != nil || w < 1 || h < 1 || w > MaxImageSide || h > MaxImageSide {
		return 0, 0, fmt.Errorf("bad image size %q: want WxH, each 1..%d, e.g. 512x512", s, MaxImageSide)
	}
	return w, h, nil
}

// checkImages refuses images where a kind has no image part.
func (c Config) checkImages() error {
	b := c.Body
	switch {
	case b.Images == 0:
		return nil
	case b.Images < 0 || b.Images > MaxImages:
		return &SettingError{SettingImages, fmt.Errorf("%d images a request is not within 1..%d", b.Images, MaxImages)}
	case b.ImageW < 1 || b.ImageH < 1 || b.ImageW > MaxImageSide || b.ImageH > MaxImageSide:
		return &SettingError{SettingImages, fmt.Errorf("an image of %dx%d is not within 1..%d a side", b.ImageW, b.ImageH, MaxImageSide)}
	}
	switch c.API {
	case OpenAIChat, "", OpenAIResponses:
		return nil
	}
	return &SettingError{SettingImages, fmt.Errorf("%s takes no image parts here: use openai-chat or openai-responses", c.API)}
}

// imagePool is a run's images, as data: URLs, dealt to the requests in
// turn.
type imagePool struct {
	urls  []string
	per   int   // images a request
	bytes int64 // the PNG bytes a request carries (before base64)
	next  atomic.Uint64
}

// newImagePool makes the pool of b's images (nil when it asks for none).
func newImagePool(b BodyOptions) (*imagePool, error) {
	if b.Images <= 0 {
		return nil, nil
	}
	p := &imagePool{per: b.Images}
	var total int64
	for i := range imagePoolSize {
		raw, err := makePNG(b.ImageW, b.ImageH, b.ImageSeed+uint64(i))
		if err != nil {
			return nil, fmt.Errorf("make an image: %w", err)
		}
		total += int64(len(raw))
		p.urls = append(p.urls, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(raw))
	}
	p.bytes = total * int64(b.Images) / imagePoolSize
	return p, nil
}

// take is the next request's images.
func (p *imagePool) take() []string {
	n := p.next.Add(1) - 1
	out := make([]string, p.per)
	for i := range out {
		out[i] = p.urls[(n*uint64(p.per)+uint64(i))%uint64(len(p.urls))]
	}
	return out
}

// makePNG draws a w×h picture from seed: tiles of 16 pixels, each a
// colour of its own shaded across, which compresses as a photo does
// (neither a flat colour nor noise).
func makePNG(w, h int, seed uint64) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x94d049bb133111eb))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	const tile = 16
	cols := (w + tile - 1) / tile
	base := make([]color.NRGBA, cols*((h+tile-1)/tile))
	for i := range base {
		base[i] = color.NRGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
	}
	for y := range h {
		for x := range w {
			c := base[(y/tile)*cols+x/tile]
			shade := uint8((x % tile) * 4)
			img.SetNRGBA(x, y, color.NRGBA{c.R + shade, c.G, c.B - shade, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ImageBytes is the PNG bytes of the images each request carries (0:
// none), for the run's manifest.
func (c *Client) ImageBytes() int64 {
	if p := c.images(); p != nil {
		return p.bytes
	}
	return 0
}

// images is the client's pool (nil: none).
func (c *Client) images() *imagePool {
	switch pr := c.proto.(type) {
	case *openaiProto:
		return pr.images
	case *responsesProto:
		return pr.images
	}
	return nil
}

// chatWithImages is the conversation with the images in its last user
// turn, as Chat Completions' content parts.
func chatWithImages(msgs []Message, urls []string) []any {
	return withImages(msgs, urls, "text", func(u string) any {
		return map[string]any{"type": "image_url", "image_url": map[string]any{"url": u}}
	})
}

// responsesWithImages is the input with the images in its last user
// turn, as the Responses API's input_text and input_image parts.
func responsesWithImages(msgs []Message, urls []string) []any {
	return withImages(msgs, urls, "input_text", func(u string) any {
		return map[string]any{"type": "input_image", "image_url": u}
	})
}

// withImages is msgs with the last user turn's content made parts: its
// text as a part of textType, then an image part (part) per URL.
func withImages(msgs []Message, urls []string, textType string, part func(url string) any) []any {
	out := make([]any, len(msgs))
	last := lastUser(msgs)
	for i, m := range msgs {
		if i != last {
			out[i] = map[string]any{"role": m.Role, "content": m.Content}
			continue
		}
		parts := []any{map[string]any{"type": textType, "text": m.Content}}
		for _, u := range urls {
			parts = append(parts, part(u))
		}
		out[i] = map[string]any{"role": m.Role, "content": parts}
	}
	return out
}

// lastUser is the index of the last user turn (the last turn when none).
func lastUser(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return i
		}
	}
	return len(msgs) - 1
}

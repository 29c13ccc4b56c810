package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// ErrNoCacheReset is ResetPrefixCache's answer from a server with no
// endpoint that empties its prefix cache: not offered by this server.
var ErrNoCacheReset = errors.New("no prefix cache reset endpoint (vLLM's /reset_prefix_cache, SGLang's /flush_cache): not offered by this server")

// cacheResetPaths are the engines' endpoints that empty the prefix
// cache, tried in order: vLLM's (served in its dev mode,
// VLLM_SERVER_DEV_MODE=1), then SGLang's.
var cacheResetPaths = [...]string{"/reset_prefix_cache", "/flush_cache"}

// ResetPrefixCache empties the server's prefix cache through the first of
// its engines' endpoints it serves (vLLM's POST /reset_prefix_cache,
// SGLang's /flush_cache), the one that answered kept for the next call.
// A server that serves neither (404, 405, 501) answers ErrNoCacheReset;
// one that refuses (SGLang, with requests in flight: 400) an error with
// its words.
func (c *Client) ResetPrefixCache(ctx context.Context) error {
	if i := c.resetPath.Load(); i > 0 {
		_, err := c.postReset(ctx, cacheResetPaths[i-1])
		return err
	}
	for i, path := range cacheResetPaths {
		served, err := c.postReset(ctx, path)
		if served {
			c.resetPath.Store(int32(i + 1))
			return err
		}
		if err != nil {
			return err
		}
	}
	return ErrNoCacheReset
}

// postReset posts to path; served is false when the server has no such
// endpoint.
func (c *Client) postReset(ctx context.Context, path string) (served bool, err error) {
	u, err := parseBase(c.cfg.URL)
	if err != nil {
		return false, err
	}
	u.Path, u.RawQuery = path, ""
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), http.NoBody)
	if err != nil {
		return false, err
	}
	req.Header = c.header.Clone()
	resp, err := c.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("%s: %s", path, c.redact(err.Error()))
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	switch {
	case resp.StatusCode/100 == 2:
		return true, nil
	case resp.StatusCode == http.StatusNotFound, resp.StatusCode == http.StatusMethodNotAllowed, resp.StatusCode == http.StatusNotImplemented:
		return false, nil
	}
	return true, fmt.Errorf("%s: %s", path, c.redact(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, errorText(excerpt))))
}

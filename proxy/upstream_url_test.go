package proxy

import (
	"strings"
	"testing"
)

// TestUpstreamEndingInV1IsRefused: an upstream base URL ending in /v1 (as
// the OpenAI SDKs spell a base URL) is refused at start with the URL to give
// instead, since the client's path /v1/… is appended to it. (Before: it was
// accepted and every request went to …/v1/v1/responses, the provider's 404.)
// A base URL with another path (a gateway prefix) is accepted.
func TestUpstreamEndingInV1IsRefused(t *testing.T) {
	for _, c := range []struct{ opts Options }{
		{Options{OpenAIUpstream: "https://api.openai.com/v1"}},
		{Options{Upstream: "https://openrouter.ai/api/v1/"}},
		{Options{AnthropicUpstream: "https://api.anthropic.com/v1", OpenAIUpstream: "https://api.openai.com"}},
	} {
		c.opts.Dir = t.TempDir()
		_, err := New(c.opts)
		if err == nil || !strings.Contains(err.Error(), "without /v1") || !strings.Contains(err.Error(), "/v1/v1/") {
			t.Errorf("%+v: %v; want a refusal naming /v1/v1/ and the base URL without /v1", c.opts, err)
		}
	}
	// Each error names the option that holds the URL: the default upstream
	// (--upstream) is no "anthropic upstream" because it also serves that API.
	for _, c := range []struct {
		opts Options
		name string
	}{
		{Options{Upstream: "https://api.openai.com/v1"}, "default upstream"},
		{Options{Upstream: "ftp://example.com"}, "default upstream"},
		{Options{AnthropicUpstream: "https://api.anthropic.com/v1"}, "anthropic upstream"},
		{Options{Upstream: "https://api.openai.com", OpenAIUpstream: "https://api.openai.com/v1"}, "openai upstream"},
	} {
		c.opts.Dir = t.TempDir()
		if _, err := New(c.opts); err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%+v: %v; want an error naming the %s", c.opts, err, c.name)
		}
	}
	_, err := New(Options{OpenAIUpstream: "https://dashscope-intl.aliyuncs.com/compatible-mode", Dir: t.TempDir()})
	if err != nil {
		t.Errorf("a gateway prefix: %v", err)
	}
	_, err = New(Options{OpenAIUpstream: "https://api.openai.com/v1", Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `"https://api.openai.com"`) {
		t.Errorf("the remedy does not name https://api.openai.com: %v", err)
	}
}

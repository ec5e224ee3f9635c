package harness

import "math"

// Pricing is a provider's price structure for input tokens, relative to the
// price of one uncached input token (1.0): what a request's prompt costs
// given how much of it the provider's prompt cache already holds.
//
// A provider caches the prefix of a request; the next request that starts
// with the same bytes reads that prefix from the cache at CacheRead, and
// pays CacheWrite for every token after it (the part the cache did not hold,
// which it now writes). A fold event rewrites the forwarded prompt from its
// first folded message on, so that part moves from CacheRead to
// CacheWrite once; the requests after it are smaller by what it removed.
type Pricing struct {
	Name string `json:"name"`
	// CacheRead is the price of a token read from the prompt cache.
	CacheRead float64 `json:"cache_read"`
	// CacheWrite is the price of a token after the cached prefix (uncached
	// input, written to the cache): 1.0 without a write premium.
	CacheWrite float64 `json:"cache_write"`
}

// The price structures cost is reported with (the proxy's GET /contextfold/stats, the
// inspector's Working set page, the replay).
var (
	// AnthropicPricing: Anthropic's 5-minute prompt cache, a cache read at
	// 0.1× the input price and a cache write at 1.25×, on the part of a
	// request after the cached prefix.
	AnthropicPricing = Pricing{Name: "anthropic", CacheRead: 0.1, CacheWrite: 1.25}
	// OpenAIPricing: OpenAI's automatic prompt caching, cached input
	// discounted and no write premium. The discount is the deepest OpenAI
	// offers (GPT-5 family: 90 %; GPT-4.1: 75 %, GPT-4o: 50 %), the one
	// under which invalidating the cache costs the most.
	OpenAIPricing = Pricing{Name: "openai", CacheRead: 0.1, CacheWrite: 1.0}
)

// Cost returns the price of a request of total input tokens whose first
// cached tokens the provider's prompt cache holds, in units of one uncached
// input token. cached is clamped to [0, total].
func (p Pricing) Cost(total, cached int) float64 {
	cached = min(max(cached, 0), total)
	return p.CacheRead*float64(cached) + p.CacheWrite*float64(total-cached)
}

// Billed is what one request's input costs under each price structure: the
// client's body and the forwarded one, each with its cached prefix (the
// longest common prefix with the session's previous body of the same side).
//
// Client and Forwarded are sums kept exactly (in ten-thousandths of a
// token, by Add), so the same requests give the same figures whatever the
// order they were added in (concurrent requests finish in any order).
type Billed struct {
	Pricing   Pricing `json:"pricing"`
	Client    float64 `json:"client"`    // in uncached input tokens
	Forwarded float64 `json:"forwarded"` // in uncached input tokens

	client, forwarded int64 // the sums, in costUnit
}

// costUnit is the resolution of Billed's sums: a ten-thousandth of an
// uncached input token (prices are given to four decimals at most).
const costUnit = 10000

// units returns the price of a request of total input tokens whose first
// cached tokens are cached, in costUnit (Cost, with prices rounded to
// four decimals).
func (p Pricing) units(total, cached int) int64 {
	cached = min(max(cached, 0), total)
	read := int64(math.Round(p.CacheRead * costUnit))
	write := int64(math.Round(p.CacheWrite * costUnit))
	return read*int64(cached) + write*int64(total-cached)
}

// Add adds one request's costs under b.Pricing: the client's body of
// clientTokens input tokens (clientCached of them a cached prefix) and the
// forwarded one. Not safe for concurrent use.
func (b *Billed) Add(clientTokens, clientCached, forwardedTokens, forwardedCached int) {
	b.client += b.Pricing.units(clientTokens, clientCached)
	b.forwarded += b.Pricing.units(forwardedTokens, forwardedCached)
	b.Client, b.Forwarded = float64(b.client)/costUnit, float64(b.forwarded)/costUnit
}

// Pricings are the price structures costs are reported with.
func Pricings() []Pricing { return []Pricing{AnthropicPricing, OpenAIPricing} }

// BilledCosts sums the cost of the requests of a working-set log under each
// of Pricings, from their token counts and cache-stable prefixes.
func BilledCosts(reqs []WorkingSetRecord) []Billed {
	var out []Billed
	for _, p := range Pricings() {
		b := Billed{Pricing: p}
		for _, r := range reqs {
			b.Add(r.ClientTokens, r.ClientStablePrefixTokens, r.ForwardedTokens, r.StablePrefixTokens)
		}
		out = append(out, b)
	}
	return out
}

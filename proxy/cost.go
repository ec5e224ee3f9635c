package proxy

import "github.com/contextfold/contextfold/harness"

// Pricing is a provider's price structure for input tokens
// (harness.Pricing).
type Pricing = harness.Pricing

// The price structures of harness: Anthropic's 5-minute cache (read 0.1×,
// write 1.25×) and OpenAI's (cached input 0.1×, no write premium).
var (
	AnthropicPricing = harness.AnthropicPricing
	OpenAIPricing    = harness.OpenAIPricing
)

// PricingFor returns the price structure of the API a request used:
// AnthropicPricing for the Anthropic Messages API, OpenAIPricing for the
// others.
func PricingFor(api API) Pricing {
	if api == APIAnthropic {
		return AnthropicPricing
	}
	return OpenAIPricing
}

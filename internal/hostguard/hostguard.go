// Package hostguard is the DNS-rebinding guard shared by the local HTTP
// servers (the inspector, the proxy's stats endpoint): a request is served
// only when its Host header names a loopback name or a host the user allowed
// explicitly.
//
// A page on any web site can make a browser send requests to 127.0.0.1
// through a DNS name it rebinds to that address; such a request carries the
// attacker's host name in its Host header, never a loopback name, so
// checking the Host header defeats it.
package hostguard

import (
	"net"
	"strings"
)

// Guard decides which Host headers are served. The zero value is not
// usable; build one with New. A Guard is read-only after New and safe for
// concurrent use.
type Guard struct {
	hosts map[string]bool
}

// New returns a guard that allows the loopback names localhost, 127.0.0.1
// and ::1, plus the extra host names given (without a port, brackets
// optional for IPv6, case-insensitive).
func New(extra []string) *Guard {
	g := &Guard{hosts: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	for _, h := range extra {
		g.hosts[normalize(h)] = true
	}
	return g
}

// Allowed reports whether a Host header value ("name" or "name:port")
// names an allowed host. An empty Host is refused.
func (g *Guard) Allowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return host != "" && g.hosts[normalize(host)]
}

func normalize(h string) string { return strings.ToLower(strings.Trim(h, "[]")) }

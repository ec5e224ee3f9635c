package hostguard

import "testing"

func TestAllowed(t *testing.T) {
	g := New([]string{"My-Box.lan", "[fd00::1]"})
	for host, want := range map[string]bool{
		"127.0.0.1:8787": true, "localhost": true, "LOCALHOST:1": true, "[::1]:80": true,
		"my-box.lan:8787": true, "[fd00::1]:1": true, "fd00::1": true,
		"": false, "evil.example:8787": false, "127.0.0.1.evil.example": false,
		"localhost.evil.example:80": false, "0.0.0.0:8787": false, "[::2]:1": false,
	} {
		if got := g.Allowed(host); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", host, got, want)
		}
	}
}

package inspect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func utf8Valid(s string) bool { return utf8.ValidString(s) }

// CheckListenAddr checks a listen address ("host:port") for the inspector.
// It reports whether the host is a loopback address (127.0.0.0/8, ::1 or
// "localhost"); any other host, including an empty one (every interface),
// is refused unless allowRemote is true, because the inspector shows the
// whole store.
func CheckListenAddr(addr string, allowRemote bool) (loopback bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: want host:port, such as 127.0.0.1:7137", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return false, fmt.Errorf("listen address %q: the port must be a number from 0 to 65535", addr)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true, nil
	}
	if allowRemote {
		return false, nil
	}
	what := host
	if host == "" {
		what = "every interface"
	}
	return false, fmt.Errorf("listen address %q: %s is not a loopback address; the inspector shows the whole store, so it binds to loopback only unless you pass --allow-remote", addr, what)
}

// Serve serves h on ln until ctx is done, then shuts down gracefully. It
// returns nil after a shutdown, or the error that stopped the server.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) && err == nil {
			err = e
		}
		return err
	}
}

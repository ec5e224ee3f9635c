package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/contextfold/contextfold/inspect"
)

func init() { commands = append(commands, newUICmd) }

// defaultUIListen is where 'contextfold ui' listens unless told otherwise.
const defaultUIListen = "127.0.0.1:7137"

func newUICmd(g *globals) *cobra.Command {
	var listen string
	var open, allowRemote bool
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Inspect the store in a local web page: timeline, steps, MMU simulator, recall, evictions, validate (read-only, CONF-08)",
		Long: `ui serves the developer view of the store from this binary (no CDN, works
offline): the timeline of folded steps with their verification state, each
step's raw payload and hashes with "verify now", the MMU simulator (what scan
would hydrate for a prompt, within the budgets), recall with its tiers, the
eviction log, the validate report with repair suggestions, and charts.

A database session (--store postgres://…?session=NAME) is served the same
way, read-only: no row is written, and the URL is shown without its password.

It is read-only: browsing changes no byte of the store, and nothing shown
reaches a model (CONF-08). It listens on loopback only, unless --allow-remote
is given for another address; it then shows the whole store to that network.`,
		Example: `  contextfold demo --dir /tmp/demo/.contextfold
  contextfold --dir /tmp/demo/.contextfold ui --open
  contextfold ui --listen 127.0.0.1:0`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			loopback, err := inspect.CheckListenAddr(listen, allowRemote)
			if err != nil {
				return usagef("%v", err)
			}
			if err := g.onlySession(cmd); err != nil {
				return err
			}
			s, err := g.openExistingStore(true)
			if err != nil {
				return err
			}
			h, err := inspect.New(s, inspect.Options{AnyHost: !loopback})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usagef("cannot listen on %s: %v (choose a free port, e.g. --listen 127.0.0.1:0)", listen, err)
			}
			url := "http://" + ln.Addr().String() + "/"
			out := cmd.OutOrStdout()
			if g.jsonOut {
				g.writeOut(out, "", map[string]any{"url": url, "dir": s.Dir(), "read_only": true})
			} else {
				fmt.Fprintf(out, "contextfold inspector for %s\n  %s\n  read-only; press Ctrl-C to stop\n", s.Dir(), url)
			}
			if open {
				if err := openBrowser(url); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "contextfold: cannot open a browser (%v); open %s yourself\n", err, url)
				}
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return inspect.Serve(ctx, ln, h)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultUIListen, "address to listen on, host:port (port 0 picks a free one)")
	cmd.Flags().BoolVar(&open, "open", false, "open the inspector in the default browser")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow a non-loopback --listen address (UNSAFE: shows the whole store to that network)")
	return cmd
}

// openBrowser asks the desktop to open url; it does not wait for the browser.
func openBrowser(url string) error {
	var c *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		c = exec.Command("open", url)
	case "windows":
		c = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		if _, err := exec.LookPath("xdg-open"); err != nil {
			return errors.New("xdg-open not found")
		}
		c = exec.Command("xdg-open", url)
	}
	if err := c.Start(); err != nil {
		return err
	}
	go c.Wait()
	return nil
}

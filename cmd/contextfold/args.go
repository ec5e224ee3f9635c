package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// The positional-argument checks of the commands. Each error names the
// command, what it takes and what it got, then its usage line and where its
// examples are (exit 1), instead of cobra's "accepts 1 arg(s), received 0"
// or, for an extra argument to a command that takes none, "unknown command".

// exactArgs accepts exactly n positional arguments.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return argsError(cmd, args, "takes "+plural(n, "argument"))
		}
		return nil
	}
}

// maxArgs accepts at most n positional arguments.
func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return argsError(cmd, args, "takes at most "+plural(n, "argument"))
		}
		return nil
	}
}

// noArgs accepts no positional argument.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return argsError(cmd, args, "takes no arguments")
	}
	return nil
}

func argsError(cmd *cobra.Command, args []string, takes string) error {
	var got string
	switch {
	case len(args) == 0:
		got = "none"
	case len(args) > 3 || !strings.HasPrefix(takes, "takes no"):
		got = strconv.Itoa(len(args))
	default:
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = strconv.Quote(a)
		}
		got = strings.Join(q, " ")
	}
	return usagef("%s %s, got %s; usage: %s (examples: %s --help)", cmd.Name(), takes, got, cmd.UseLine(), cmd.CommandPath())
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
